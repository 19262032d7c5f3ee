"""The admin's first pages as an operator meets them, in English and in Chinese: the index puts the tools
used most (human queue, change requests, simulator, map) first, with Django's "Recent actions" beside
the apps and no empty bands between them, and no "View site" to a page that does not exist; the decision
log wraps keys after their underscores only, marks only the overridden rows, and counts decisions.
Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agents.runtimes.services import agent_create
from agents.sessions.decide import decision_make
from rules.decisions.compute import DecideRequest
from rules.engine import Candidate
from rules.models import DecisionRecord
from tests.support import load_demo

SHOTS = Path("/tmp")  # noqa: S108
LANGUAGES = ["en", "zh-hans"]
TOOLS = ["#human-queue-panel", "#governance-panel", "#simulator-panel", "#reports-panel"]

BOX = (
    "(s) => { const b = document.querySelector(s).getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }"
)
# What is painted at a point: the topmost element there with a background of its own.
PAINTED = r"""([x, y]) => {
  const clear = (e) => /rgba\(0, 0, 0, 0\)|transparent/.test(getComputedStyle(e).backgroundColor);
  const e = document.elementsFromPoint(x, y).find((e) => !clear(e));
  return e ? e.tagName + (e.id ? '#' + e.id : '') : 'none';
}"""
# Every place a cell's text goes onto a new line, as (the character before, the character after).
LINE_BREAKS = r"""(selector) => {
  const breaks = [];
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let previous = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getBoundingClientRect();
        const char = node.data[i];
        if (/\s/.test(char)) { if (previous) previous.char = ' '; continue; }  // a space ends a line unseen
        if (!rect.width) continue;
        if (previous && rect.top > previous.top + 2) breaks.push(previous.char + '|' + char + ' in ' + cell.innerText);
        previous = {top: rect.top, char: char};
      }
    }
  }
  return breaks;
}"""


def _cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef"


@pytest.fixture
def signed_in(live_server, transactional_db, chromium_page):
    load_demo()
    get_user_model().objects.create_user(username="ops", password="ops-password-1", is_staff=True, is_superuser=True)

    def sign_in(language: str):
        page = chromium_page
        page.context.clear_cookies()
        page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "ops")
        page.fill("#id_password", "ops-password-1")
        page.click("input[type=submit]")
        page.wait_for_selector("#site-name")
        assert page.get_attribute("html", "lang") == language
        return page

    return sign_in


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_index_puts_operators_tools_first_and_recent_actions_beside(live_server, signed_in, language):
    page = signed_in(language)
    # The whole page in the viewport: what is painted between two sections is asked of a point, and a
    # point below the viewport has nothing painted (the index grows with every model the admin gains).
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": max(height, page.viewport_size["height"])})
    page.screenshot(path=str(SHOTS / f"arbiter-index-{language}.png"), full_page=True)
    apps = page.locator("#content-main .app-rules, #content-main .app-agents, #content-main .app-auth")
    assert apps.count() == 3
    first_app_top = min(page.evaluate(BOX, f"#content-main .app-{a}")[1] for a in ("rules", "agents", "auth"))
    for tool in TOOLS:
        bottom = page.evaluate(BOX, tool)[3]
        assert bottom <= first_app_top, f"{tool} is below the apps"
        assert page.locator(f"#content-main {tool}").count() == 1

    # Recent actions: Django's sidebar, to the right of the content and starting at its top.
    main = page.evaluate(BOX, "#content-main")
    recent = page.evaluate(BOX, "#recent-actions-module")
    assert page.locator("#content-related #recent-actions-module").count() == 1
    assert recent[0] >= main[2] - 1 and abs(recent[1] - main[1]) < 5

    # No band: between two sections the page's own background shows, and a section's heading is one line.
    order = sorted(("rules", "agents", "auth"), key=lambda a: page.evaluate(BOX, f"#content-main .app-{a}")[1])
    for upper, lower in itertools.pairwise(order):
        above, below = (
            page.evaluate(BOX, f"#content-main .app-{upper}"),
            page.evaluate(BOX, f"#content-main .app-{lower}"),
        )
        assert below[1] > above[3], "sections overlap"
        assert page.evaluate(PAINTED, [above[0] + 20, (above[3] + below[1]) / 2]) == "BODY"
        caption = page.evaluate(BOX, f"#content-main .app-{lower} caption")
        assert caption[3] - caption[1] < 40, f"the {lower} heading is {caption[3] - caption[1]} px tall"

    # Nothing leads to a site Arbiter does not have.
    assert page.locator("#user-tools a[href='/']").count() == 0
    assert "View site" not in page.inner_text("#user-tools") and "查看站点" not in page.inner_text("#user-tools")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_decision_log_keeps_keys_whole_marks_only_overrides_and_counts_decisions(live_server, signed_in, language):
    bot, _ = agent_create(
        name="generated_load", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t"
    )
    for amount in (100, 900):
        decision_make(agent=bot, request=DecideRequest(point="refund_approval", facts={"refund_amount": amount}))
    low = Candidate(decision="general_query", confidence=0.3)
    decision_make(agent=bot, request=DecideRequest(point="intent_routing", input="hello", candidate=low))
    assert DecisionRecord.objects.filter(overridden=True).count() == 1
    page = signed_in(language)
    page.set_viewport_size({"width": 1100, "height": 800})  # narrow enough for keys to wrap
    page.goto(f"{live_server.url}/admin/rules/decisionrecord/")
    page.screenshot(path=str(SHOTS / f"arbiter-decision-log-{language}.png"), full_page=True)

    breaks = page.evaluate(LINE_BREAKS, "#result_list tbody td:not(.field-time)")
    assert any(b.startswith("_|") for b in breaks), "no key wrapped at this width: the test proves nothing"
    # Keys may wrap after "_", text at its spaces and hyphens; Chinese between any two characters.
    inside_a_word = [b for b in breaks if b[0] not in "_ -(" and not (_cjk(b[0]) or _cjk(b[2]))]
    assert inside_a_word == []

    marks = page.locator("#result_list td.field-overridden_mark").all_inner_texts()
    assert sorted(marks) == sorted(["—", "—", "是" if language == "zh-hans" else "yes"])
    assert page.locator("#result_list td.field-overridden_mark img").count() == 0
    count = page.inner_text("#changelist-form .paginator").strip()
    assert count == ("3 个决策" if language == "zh-hans" else "3 decisions")

"""Text people must read has a WCAG contrast of at least 4.5:1 against what is painted behind it, in the
admin's light and dark colour schemes: the decision page's summary (and its date · agent · revision line),
the header's "Language" label on an edit page (where Django's forms.css greys every label).

What is behind a text is what the browser painted there — the topmost element at the text's position
with a background of its own — not only its ancestors': the decision page's summary sat on a heading
that the layout had put behind it, while every ancestor was transparent. Same Chromium as
``test_admin_browser``."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agents.runtimes.services import agent_create
from agents.sessions.decide import decision_make
from agents.sessions.services import session_create
from rules.decisions.compute import DecideRequest
from rules.models import DecisionRecord, Threshold
from tests.support import load_demo

SCREENSHOTS = Path("/tmp")  # noqa: S108
AA = 4.5

CONTRASTS = """(selector) => {
  const parse = (c) => {
    const m = c.match(/^rgba?\\(([^)]+)\\)$/);
    if (!m) throw new Error('unexpected colour ' + c);
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const luminance = ({r, g, b}) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const elements = [...document.querySelectorAll(selector)];
  if (!elements.length) throw new Error('nothing matches ' + selector);
  return elements.map((el) => {
    el.scrollIntoView({block: 'center'});
    const box = el.getBoundingClientRect();
    const x = box.left + Math.min(4, box.width / 2), y = box.top + box.height / 2;
    const behind = document.elementsFromPoint(x, y).find((e) => parse(getComputedStyle(e).backgroundColor).a > 0);
    const bg = parse(getComputedStyle(behind || document.documentElement).backgroundColor);
    const fg = parse(getComputedStyle(el).color);
    const [hi, lo] = [luminance(fg), luminance(bg.a > 0 ? bg : {r: 255, g: 255, b: 255})].sort((a, b) => b - a);
    return {text: el.innerText.trim().slice(0, 60), ratio: (hi + 0.05) / (lo + 0.05),
            color: getComputedStyle(el).color, background: getComputedStyle(behind).backgroundColor,
            behind: behind.tagName + (behind.id ? '#' + behind.id : '')};
  });
}"""


def _low(page, selector: str) -> list[dict]:
    return [found for found in page.evaluate(CONTRASTS, selector) if found["ratio"] < AA]


@pytest.fixture
def signed_in(live_server, transactional_db, chromium_page):
    load_demo()
    get_user_model().objects.create_user(username="ops", password="ops-password-1", is_staff=True, is_superuser=True)
    page = chromium_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "ops-password-1")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    return page


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_decision_pages_summary_is_readable(live_server, signed_in, scheme):
    bot, _ = agent_create(name="bot", point_keys=["refund_approval"], actor=None, reason="t")
    session_create(agent=bot, machine_key="after_sales", session_id="s-1")  # a decide names a session it has
    decision_make(
        agent=bot, request=DecideRequest(point="refund_approval", facts={"refund_amount": 900}, session_id="s-1")
    )
    record = DecisionRecord.objects.get()
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/admin/rules/decisionrecord/{record.pk}/change/")
    page.screenshot(path=str(SCREENSHOTS / f"arbiter-decision-contrast-{scheme}.png"), full_page=True)
    assert "agent bot" in page.inner_text(".arbiter-why-summary .quiet")
    for selector in (".arbiter-why-summary", ".arbiter-why-summary strong", ".arbiter-why-summary .quiet"):
        assert _low(page, selector) == [], selector


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("where", ["index", "edit page"])
def test_the_headers_language_label_is_readable(live_server, signed_in, scheme, where):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    threshold = Threshold.objects.get(key="auto_refund_limit")
    path = "/admin/" if where == "index" else f"/admin/rules/threshold/{threshold.pk}/change/"
    page.goto(f"{live_server.url}{path}")
    assert page.inner_text("#arbiter-language label") == "Language"
    assert _low(page, "#arbiter-language label") == []
    assert _low(page, "#user-tools") == []

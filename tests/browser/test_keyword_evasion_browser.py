"""A real browser on issue 21's admin: a keyword list's evasion options (in Simplified Chinese too), and
unless phrases typed on a keyword condition, saved and then deciding. Same Chromium as
``test_admin_browser`` (its ``chromium_page`` fixture); skipped without ``/usr/bin/chromium`` unless
``ARBITER_REQUIRE_BROWSER=1``."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from rules.config.records import condition_save, keyword_list_save, keyword_terms_add, point_save, rule_save
from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.models import Condition, DecisionPoint, KeywordList, Rule
from tests.support import agent_api

USERNAME, PASSWORD = "ops_evasion", "ops-password-1"

pytestmark = pytest.mark.browser


def _login(page, url: str) -> None:
    page.goto(f"{url}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def test_the_options_are_shown_ticked_as_a_new_list_has_them_and_in_chinese(
    live_server,
    transactional_db,
    chromium_page,
):
    get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    page = chromium_page
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/admin/rules/keywordlist/add/")
    for option in EVASION_OPTIONS:
        box = page.locator(f"#id_{option}")
        assert box.is_visible(), option
        assert box.is_checked() == EVASION_DEFAULTS[option], option
    page.context.add_cookies([{"name": "django_language", "value": "zh-hans", "url": live_server.url}])
    page.goto(f"{live_server.url}/admin/rules/keywordlist/add/")
    assert page.inner_text("label[for=id_match_pinyin]").startswith("匹配同音字和拼音")
    assert page.inner_text("label[for=id_fold_variants]").startswith("归并异体字")


def test_unless_phrases_typed_on_a_keyword_condition_are_saved_and_decide(
    live_server,
    transactional_db,
    chromium_page,
):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    kw = {"actor": user, "reason": "browser test"}
    high_risk = keyword_list_save(keyword_list=KeywordList(key="high_risk"), **kw)
    keyword_terms_add(keyword_list=high_risk, terms=["投诉"], **kw)
    point = point_save(
        point=DecisionPoint(key="routing", outcomes=["person", "bot"], default_outcome="bot", no_candidate="default"),
        **kw,
    )
    rule = rule_save(rule=Rule(point=point, key="complaint", priority=1, category="business", outcome="person"), **kw)
    condition_save(condition=Condition(rule=rule, kind="input_contains", keyword_list=high_risk), **kw)
    page = chromium_page
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/admin/rules/rule/{rule.pk}/change/")
    page.wait_for_selector("#id_conditions-0-unless")
    page.fill("#id_conditions-0-unless", "不是要投诉\n不想投诉")
    page.fill("#id_change_reason", "seed 001's weak signals")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert Condition.objects.get(rule=rule).unless == ["不是要投诉", "不想投诉"]
    api = agent_api("evasion_bot", ["routing"], actor=user)

    def decided(text: str) -> str:
        response = api.post("/api/v1/decisions", {"point": "routing", "input": text}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["decision"]

    assert decided("我不是要投诉，只是问一下流程") == "bot"
    assert decided("我要投诉") == "person"
    # Another kind hides the phrases (they are the keyword condition's only).
    page.goto(f"{live_server.url}/admin/rules/rule/{rule.pk}/change/")
    page.select_option("#id_conditions-0-kind", "candidate_in")
    assert not page.locator("#id_conditions-0-unless").is_visible()

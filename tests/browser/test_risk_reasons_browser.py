"""Issue 20, item 13 (risk reasons): a change request's "why it needs approval" and a rule's approval note
read in Chinese, whole, in a real browser whose language is zh-hans."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from rules.config import records
from rules.errors import ApprovalRequired
from rules.models import KeywordList, Rule
from tests.support import load_demo

USERNAME, PASSWORD = "ops_risk_zh", "ops-password-risk-zh"


def test_risk_reasons_and_notes_in_chinese(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    load_demo(actor=user)
    author = get_user_model().objects.create_user(username="author_zh", password="x-author-zh-1", is_staff=True)
    with pytest.raises(ApprovalRequired) as held:
        records.keyword_terms_add(
            keyword_list=KeywordList.objects.get(key="refund_triggers"), terms=["我"], actor=author, reason="more"
        )
    page = chromium_page
    page.set_extra_http_headers({"Accept-Language": "zh-hans,zh;q=0.9"})
    base = live_server.url
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{base}/admin/rules/changerequest/{held.value.change_request.pk}/change/")
    reasons = page.inner_text("#risks")
    assert reasons == (
        "keyword list refund_triggers: 修改了规则 intent_routing.refund_trigger 使用的关键词列表的 terms，"
        "该规则先于高风险规则 intent_routing.candidate_not_whitelisted 决策"
    )

    page.goto(f"{base}/admin/rules/rule/{Rule.objects.get(key='high_risk_keyword').pk}/change/")
    content = page.inner_text("#content")
    assert "高风险规则（合规规则）：除描述外的任何修改都需要审批。" in content
    assert "compliance rule" not in content

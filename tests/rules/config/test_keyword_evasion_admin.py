"""The keyword evasion options and unless phrases in the admin (English and zh-hans), and the why panel
naming the reading that made a hit."""

from __future__ import annotations

from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from rules.engine.evasion import EVASION_OPTIONS
from rules.models import ConfigRevision, DecisionRecord, KeywordList, Rule
from tests.support import agent_api
from tests.support.admin import form_data

pytestmark = pytest.mark.django_db

LABELS = {
    "decode_escapes": ("Decode escapes written as text", "解码写成文本的转义"),
    "ignore_invisible": ("Ignore all invisible characters", "忽略所有不可见字符"),
    "fold_variants": ("Fold variant characters", "归并异体字"),
    "fold_confusables": ("Fold look-alike letters", "归并形近字母"),
    "fold_digits": ("Fold digits for numeric terms", "归并数字词条的数字"),
    "bridge_cjk": ("Bridge one foreign character inside a CJK word", "跨过中日韩词语中夹杂的单个外来字符"),
    "match_pinyin": ("Match homophones and pinyin", "匹配同音字和拼音"),
}


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def test_every_option_is_in_the_admin_on_by_default_in_english_and_chinese(admin_client_):
    assert set(LABELS) == set(EVASION_OPTIONS)
    url = reverse("admin:rules_keywordlist_add")
    add = admin_client_.get(url)
    page = unescape(add.content.decode())
    data = form_data(add)
    for option, (english, _chinese) in LABELS.items():
        assert english in page, option
        # A new list has it on, but pinyin, which a list asks for.
        assert data.get(option) == ("on" if option != "match_pinyin" else None), option
    assert "Whole word, Chinese segmented" in page or "whole word, Chinese segmented" in page
    chinese = unescape(admin_client_.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    for option, (_english, label) in LABELS.items():
        assert label in chinese, option
    assert "整词（中文分词）" in chinese


@pytest.mark.applies_config_at_once(
    reason="the list form's who and why; held option changes: tests/rules/governance/test_keyword_evasion_governed.py"
)
def test_turning_an_option_off_is_saved_with_who_and_why_and_reaches_the_revision(demo, admin_client_, staff_user):
    keyword_list = KeywordList.objects.get(key="refund_triggers")
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(admin_client_.get(url))
    data.pop("fold_digits")  # an unticked box is not sent
    data.update(change_reason="refund words as written only")
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    keyword_list.refresh_from_db()
    assert keyword_list.fold_digits is False and keyword_list.fold_variants is True
    record = keyword_list.history.first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "refund words as written only")
    latest = ConfigRevision.objects.order_by("-number").first()
    listed = {kl["key"]: kl for kl in latest.snapshot["keyword_lists"]}
    assert listed["refund_triggers"]["fold_digits"] is False
    assert listed["high_risk"]["fold_digits"] is True


def test_the_rule_page_shows_the_unless_phrases_of_its_keyword_condition(demo, admin_client_):
    rule = Rule.objects.get(key="high_risk_keyword")
    page = unescape(admin_client_.get(reverse("admin:rules_rule_change", args=[rule.pk])).content.decode())
    assert "不是要投诉\n不是投诉" in page
    chinese = unescape(
        admin_client_.get(
            reverse("admin:rules_rule_change", args=[rule.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
    )
    assert "除非" in chinese and "弱信号短语" in chinese


def test_the_why_panel_says_which_reading_made_the_match(demo, admin_client_, actor):
    api = agent_api("support_bot", actor=actor)
    response = api.post("/api/v1/decisions", {"point": "intent_routing", "input": "我要头诉"}, format="json")
    assert response.status_code == 201, response.content
    record = DecisionRecord.objects.get(pk=response.json()["id"])
    assert record.reason == "high_risk_keyword: keyword 投诉 via pinyin (list high_risk)"
    assert record.keyword_hits == {"high_risk": ["投诉"]}  # the hit itself is the list's own term
    page = unescape(admin_client_.get(reverse("admin:rules_decisionrecord_change", args=[record.pk])).content.decode())
    assert "keyword 投诉 via pinyin (list high_risk)" in page

"""Issue 20, item 4: low-risk edits that outrank a high-risk rule, or change what it reads, must not apply
at once. Each attack of the issue, through the real gate, on the after-sales demo; then the live decision
is checked over the agent API: the high-risk rule still decides."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest
from django.utils import translation

from rules.config import records
from rules.config.selectors import config_document
from rules.config.yaml_import import config_apply
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_withdraw
from rules.models import ChangeRequest, ConfigRevision, KeywordList, Rule, Threshold
from tests.support import DEMO_TEXT, agent_api, decide


@pytest.fixture(autouse=True)
def _language_restored():
    """Pages asked for in zh-hans leave the test thread's language active: later tests expect English."""
    yield
    translation.deactivate()


ASKS_A_PERSON = {
    "point": "intent_routing",
    "input": "我想问一下",
    "candidate": {"decision": "human_handoff", "confidence": 0.95},
}


def _routing(doc):
    return next(p for p in doc["points"] if p["key"] == "intent_routing")


def _rule(doc, point_key, key):
    point = next(p for p in doc["points"] if p["key"] == point_key)
    return next(r for r in point["rules"] if r["key"] == key)


def _held(document, editor):
    """Apply ``document`` as one change; it must become a pending request and leave revision 1 live."""
    result = config_apply(document=document, actor=editor, reason="tune")
    assert result.change_request is not None, "applied at once"
    assert result.change_request.state == "pending"
    assert ConfigRevision.objects.count() == 1
    return result.change_request


def test_adding_a_term_to_a_list_a_rule_ahead_of_a_risk_rule_uses_waits_for_approval(demo, editor):
    client = agent_api()
    assert decide(client, ASKS_A_PERSON).json()["decision"] == "human_handoff"
    refund_words = KeywordList.objects.get(key="refund_triggers")
    with pytest.raises(ApprovalRequired) as held:
        records.keyword_terms_add(keyword_list=refund_words, terms=["我"], actor=editor, reason="more refunds")
    assert held.value.change_request.risks[0]["record"] == "keyword list refund_triggers"
    assert (
        "decides before the high-risk rule intent_routing.candidate_not_whitelisted"
        in (held.value.change_request.risks[0]["why"])
    )
    body = decide(client, ASKS_A_PERSON).json()
    assert (body["decision"], body["rule"]["key"]) == ("human_handoff", "candidate_not_whitelisted")


def test_a_new_threshold_and_an_edit_of_a_rule_ahead_of_a_risk_rule_wait_for_approval(demo, editor):
    client = agent_api()
    document = config_document()
    document["thresholds"].append({"key": "everything", "value": 2, "min": 0, "max": 2, "high_risk": False})
    low = _rule(document, "intent_routing", "low_confidence")
    low["conditions"] = [{"candidate_confidence_below": "everything"}]
    low["outcome"] = "general_query"
    request = _held(document, editor)
    assert [(r["record"], r["why"]) for r in request.risks] == [
        (
            "rule intent_routing.low_confidence",
            "changes conditions, outcome of a rule that decides before the high-risk rule "
            "intent_routing.candidate_not_whitelisted",
        )
    ]
    assert not Threshold.objects.filter(key="everything").exists()
    assert decide(client, ASKS_A_PERSON).json()["decision"] == "human_handoff"


def test_raising_an_unflagged_threshold_an_approved_risk_rule_reads_waits_for_approval(db, editor):
    # The first configuration (applies directly): the demo plus an unflagged hard cap read by a risk rule.
    from rules.config.document.validate import config_from_yaml

    first = config_from_yaml(DEMO_TEXT)
    first["thresholds"].append({"key": "hard_cap", "value": 10000, "min": 0, "max": 10**9, "high_risk": False})
    refunds = next(p for p in first["points"] if p["key"] == "refund_approval")
    refunds["rules"].append(
        {
            "key": "over_hard_cap",
            "priority": 5,
            "category": "risk",
            "match": "all",
            "mode": "enforce",
            "outcome": "human_handoff",
            "conditions": [{"fact": "refund_amount", "op": ">", "threshold": "hard_cap"}],
        }
    )
    assert config_apply(document=first, actor=editor, reason="first").revision == 1
    cap = Threshold.objects.get(key="hard_cap")
    cap.value = Decimal(10**9)
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=cap, actor=editor, reason="no cap")
    assert [(r["record"], r["why"]) for r in held.value.change_request.risks] == [
        ("threshold hard_cap", "changes value of a threshold the high-risk rule refund_approval.over_hard_cap uses")
    ]
    assert Threshold.objects.get(key="hard_cap").value == 10000


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: _routing(d).__setitem__("when_no_candidate", "default"), "changes the point's when_no_candidate"),
        (
            lambda d: next(p for p in d["points"] if p["key"] == "refund_approval")["facts"].__setitem__(
                "refund_amount", "string"
            ),
            "changes the type of the fact refund_amount",
        ),
        (
            lambda d: next(m for m in d["machines"] if m["key"] == "change_address")["actions"].__setitem__(
                "executing", ["change_address", "refund"]
            ),
            "changes the machine's actions",
        ),
    ],
)
def test_what_decides_around_the_rules_waits_for_approval(demo, editor, edit, why):
    document = config_document()
    edit(document)
    if "refund_amount" in str(why):
        # A number compared with > cannot be a string fact: the rule goes too (it is high-risk itself).
        next(p for p in document["points"] if p["key"] == "refund_approval")["rules"] = []
    assert why in [r["why"] for r in _held(document, editor).risks]


def test_a_low_risk_change_still_applies_at_once(demo, editor):
    document = config_document()
    document["thresholds"].append({"key": "unused", "value": 3, "high_risk": False})
    document["keyword_lists"].append({"key": "thanks", "match": "substring", "terms": ["谢谢"]})
    _rule(document, "intent_routing", "refund_trigger")["description"] = "Money back is reviewed."
    result = config_apply(document=document, actor=editor, reason="tidy")
    assert result.change_request is None and result.revision == 2
    assert not ChangeRequest.objects.exists()
    assert Rule.objects.get(key="refund_trigger").description == "Money back is reviewed."


def test_the_request_keeps_what_it_needs_to_be_shown_in_another_language(demo, editor):
    document = copy.deepcopy(config_document())
    _rule(document, "intent_routing", "high_risk_keyword")["mode"] = "shadow"
    (stored,) = _held(document, editor).risks
    assert stored == {
        "record": "rule intent_routing.high_risk_keyword",
        "why": "changes mode of a high-risk rule (a compliance rule)",
        "message": "changes %(fields)s of a high-risk rule (%(why)s)",
        "params": {"fields": "mode", "why": {"message": "a compliance rule", "params": {}}},
    }


# --- the impact preview: decisions a high-risk rule made that the change would flip -------------------


def test_the_impact_preview_counts_flipped_decisions_of_high_risk_rules_on_the_page_and_the_api(
    demo, editor, approver, client
):
    from rest_framework.test import APIClient

    from rules.governance.impact import change_request_impact_run
    from rules.governance.tokens import staff_token_create

    bot = agent_api()
    for body in (
        ASKS_A_PERSON,  # candidate_not_whitelisted (risk) decides; with 我 a refund word: refund_review
        {"point": "intent_routing", "input": "我要投诉"},  # high_risk_keyword still decides first
        {"point": "intent_routing", "input": "我想看看", "candidate": {"decision": "product_info", "confidence": 0.9}},
        {"point": "intent_routing", "input": "你好", "candidate": {"decision": "general_query", "confidence": 0.9}},
    ):
        assert decide(bot, body).status_code == 201
    with pytest.raises(ApprovalRequired) as held:
        records.keyword_terms_add(
            keyword_list=KeywordList.objects.get(key="refund_triggers"), terms=["我"], actor=editor, reason="more"
        )
    request = held.value.change_request
    impact = change_request_impact_run(request_id=request.pk)
    assert (impact["evaluated"], impact["changed"], impact["high_risk_flipped"]) == (4, 2, 1)

    client.force_login(approver)
    page = client.get(f"/admin/rules/changerequest/{request.pk}/change/").content.decode()
    assert '<strong id="impact-high-risk">1 of them was decided by a high-risk rule.</strong>' in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=approver)}")
    body = api.get(f"/api/v1/change-requests/{request.pk}").json()
    assert body["impact"]["high_risk_flipped"] == 1
    assert body["risks"] == [{"record": "keyword list refund_triggers", "why": request.risks[0]["why"]}]


# --- the reasons in the reader's language (issue 20, item 13) ------------------------------------------


def test_risk_reasons_show_in_the_admins_language_and_old_rows_stay_readable(demo, editor, approver, client):
    document = config_document()
    _rule(document, "intent_routing", "high_risk_keyword")["mode"] = "shadow"
    request = _held(document, editor)
    client.force_login(approver)
    url = "/admin/rules/changerequest/{}/change/"
    chinese = client.get(url.format(request.pk), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "<strong>rule intent_routing.high_risk_keyword</strong>: 修改了高风险规则（合规规则）的 mode" in chinese
    assert "a compliance rule" not in chinese
    english = client.get(url.format(request.pk), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "changes mode of a high-risk rule (a compliance rule)" in english
    # A row stored before reasons kept their message id reads as its English sentence.
    ChangeRequest.objects.filter(pk=request.pk).update(
        risks=[{"record": "threshold auto_refund_limit", "why": "changes value of a high-risk threshold"}]
    )
    stored_before = client.get(url.format(request.pk), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "changes value of a high-risk threshold" in stored_before


def test_the_admin_note_of_a_high_risk_rule_is_all_in_chinese(demo, editor, approver, client):
    client.force_login(approver)
    pk = Rule.objects.get(key="high_risk_keyword").pk
    page = client.get(f"/admin/rules/rule/{pk}/change/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "高风险规则（合规规则）" in page and "a compliance rule" not in page


def test_an_edit_that_arms_an_open_request_waits_for_approval(demo, editor, approver):
    """A request moves a harmless late rule ahead of the risk rule; its author then edits the list that
    rule reads. Against the live configuration the edit is low-risk (the rule still decides last), but
    once the request applies it decides what the risk rule sees: the edit waits too, naming the request."""
    document = config_document()
    words = copy.deepcopy(next(kl for kl in document["keyword_lists"] if kl["key"] == "refund_triggers"))
    words.update(key="late_words", name="late words", terms=["发票"])
    document["keyword_lists"].append(words)
    late = copy.deepcopy(_rule(document, "intent_routing", "refund_trigger"))
    late.update(key="late_rule", priority=900, outcome="general_query", conditions=[{"input_contains": "late_words"}])
    _routing(document)["rules"].append(late)
    assert config_apply(document=document, actor=editor, reason="a late rule").change_request is None
    ahead = config_document()
    _rule(ahead, "intent_routing", "late_rule")["priority"] = 30
    request = config_apply(document=ahead, actor=editor, reason="move it up").change_request
    assert request is not None and request.state == "pending"

    late_words = KeywordList.objects.get(key="late_words")
    with pytest.raises(ApprovalRequired) as held:
        records.keyword_terms_add(keyword_list=late_words, terms=["我"], actor=editor, reason="more words")
    reason = held.value.change_request.risks[0]
    assert reason["record"] == "keyword list late_words"
    assert f"once change request {request.pk} is applied" in reason["why"]
    assert not KeywordList.objects.get(key="late_words").terms.filter(term="我").exists()

    # With no open request, the same edit applies at once: it is the request that makes it matter.
    change_request_withdraw(request=request, actor=editor)
    records.keyword_terms_add(keyword_list=late_words, terms=["我"], actor=editor, reason="more words")
    assert KeywordList.objects.get(key="late_words").terms.filter(term="我").exists()


def test_changing_a_machines_initial_or_terminal_states_is_high_risk(demo, editor):
    """A new initial state can start every session past a rule that reads the state; a new terminal state
    ends conversations there. Judged on the documents alone (the demo's machine has no other valid
    initial state to move to without changing its transitions, which is high-risk anyway)."""
    from rules.config.document.diff import config_diff
    from rules.governance.risk import change_risks

    before = config_document()
    for field, value in (("initial", "intent_clarify"), ("terminal", ["closed", "escalated"])):
        after = copy.deepcopy(before)
        next(m for m in after["machines"] if m["key"] == "after_sales")[field] = value
        risks = change_risks(before, after, config_diff(before, after))
        assert [r.record for r in risks] == ["machine after_sales"], risks
        assert field in risks[0].why

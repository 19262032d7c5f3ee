"""Seed 001's after-sales routing, decided by the engine alone (no database)."""

from __future__ import annotations

import pytest

from rules.engine import Candidate, compile_config, evaluate
from tests.rules.engine.conftest import NOON_UTC, SEED_SNAPSHOT

CONFIG = compile_config(SEED_SNAPSHOT, revision=1)
ROUTING = CONFIG.point("intent_routing")
REFUND = CONFIG.point("refund_approval")


@pytest.mark.parametrize(
    ("text", "candidate", "decision", "ruled_by", "rule", "overridden"),
    [
        # A calm complaint the model would soothe is still a complaint.
        ("我要投诉你们的客服", ("general_query", 0.82), "human_handoff", "hard_rule", "high_risk_keyword", True),
        ("再不处理我就打１２３１５", ("product_info", 0.9), "human_handoff", "hard_rule", "high_risk_keyword", True),
        ("我想退款", ("general_query", 0.95), "refund_review", "hard_rule", "refund_trigger", True),
        # Both lists hit: the compliance rule wins on priority.
        ("退款不给我就起诉", ("general_query", 0.95), "human_handoff", "hard_rule", "high_risk_keyword", True),
        ("这个商品有几种颜色", ("product_info", 0.64), "intent_clarify", "hard_rule", "low_confidence", True),
        ("这个商品有几种颜色", ("product_info", 0.65), "product_info", "llm_candidate", None, False),
        ("帮我取消订单", ("refund_request", 0.9), "human_handoff", "hard_rule", "candidate_not_whitelisted", True),
        ("帮我取消订单", ("close_order", 0.9), "close_order", "llm_candidate", None, False),
        # The model answered with something that is no outcome at all.
        ("随便聊聊", ("tell_a_joke", 0.99), "human_handoff", "hard_rule", "candidate_not_whitelisted", True),
    ],
)
def test_intent_routing(text, candidate, decision, ruled_by, rule, overridden):
    d = evaluate(ROUTING, text=text, candidate=Candidate(*candidate), now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.rule.key if d.rule else None, d.overridden) == (
        decision,
        ruled_by,
        rule,
        overridden,
    )
    assert d.needs_candidate is False


def test_reason_names_the_keyword_and_its_list():
    d = evaluate(ROUTING, text="我要投诉", candidate=None, now=NOON_UTC)
    assert d.reason == "high_risk_keyword: keyword 投诉 (list high_risk)"
    assert dict(d.keyword_hits) == {"high_risk": ("投诉",)}


def test_every_match_is_recorded_in_priority_order():
    d = evaluate(ROUTING, text="退款不给就投诉", candidate=Candidate("refund_request", 0.2), now=NOON_UTC)
    assert [m.key for m in d.matched_rules] == [
        "high_risk_keyword",
        "refund_trigger",
        "low_confidence",
        "candidate_not_whitelisted",
    ]


def test_rules_settle_requests_without_a_candidate_and_others_ask_for_one():
    settled = evaluate(ROUTING, text="我要退钱", candidate=None, now=NOON_UTC)
    assert (settled.decision, settled.needs_candidate) == ("refund_review", False)
    ask = evaluate(ROUTING, text="你好", candidate=None, now=NOON_UTC)
    assert (ask.decision, ask.ruled_by, ask.needs_candidate) == (None, None, True)


def test_candidate_conditions_are_false_without_a_candidate():
    d = evaluate(ROUTING, text="你好", candidate=None, now=NOON_UTC)
    assert d.matched_rules == ()


@pytest.mark.parametrize(
    ("amount", "decision", "ruled_by"),
    [(120, "auto_approve", "default"), (500, "auto_approve", "default"), (500.01, "human_handoff", "hard_rule")],
)
def test_refund_approval_never_needs_a_candidate(amount, decision, ruled_by):
    d = evaluate(REFUND, facts={"refund_amount": amount}, now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.needs_candidate) == (decision, ruled_by, False)


def test_full_width_and_mixed_case_input_match_normalised_terms(seed_snapshot):
    seed_snapshot["keyword_lists"][0]["terms"].append("Refund")
    point = compile_config(seed_snapshot, revision=2).point("intent_routing")
    for text in ("ＲＥＦＵＮＤ please", "rEfUnD now", "打１２３１５"):
        assert evaluate(point, text=text, now=NOON_UTC).decision == "human_handoff", text

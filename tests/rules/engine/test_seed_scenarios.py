"""Seed 001's after-sales routing, decided by the engine alone (no database)."""

from __future__ import annotations

import pytest

from rules.engine import Candidate, compile_config, evaluate
from tests.support.engine import NOON_UTC, REFUND_CASES, REFUND_FIELDS, ROUTING_CASES, ROUTING_FIELDS, SEED_SNAPSHOT

CONFIG = compile_config(SEED_SNAPSHOT, revision=1)
ROUTING = CONFIG.point("intent_routing")
REFUND = CONFIG.point("refund_approval")


@pytest.mark.parametrize(ROUTING_FIELDS, ROUTING_CASES)
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


@pytest.mark.parametrize(REFUND_FIELDS, REFUND_CASES)
def test_refund_approval_never_needs_a_candidate(amount, decision, ruled_by):
    d = evaluate(REFUND, facts={"refund_amount": amount}, now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.needs_candidate) == (decision, ruled_by, False)


def test_full_width_and_mixed_case_input_match_normalised_terms(seed_snapshot):
    seed_snapshot["keyword_lists"][0]["terms"].append("Refund")
    point = compile_config(seed_snapshot, revision=2).point("intent_routing")
    for text in ("ＲＥＦＵＮＤ please", "rEfUnD now", "打１２３１５"):
        assert evaluate(point, text=text, now=NOON_UTC).decision == "human_handoff", text

"""Replays that must come out *not* identical: a replay that always agreed would prove nothing.

``identical`` compares the logged outcome with the outcome the decision's revision gives again. These
tests change one part of an outcome at a time (``same_outcome`` on its own) and tamper with a log row
(the stored outcome no longer what the revision gives), and each must be reported as a difference.
"""

from __future__ import annotations

import pytest

from rules.decisions.replay import decision_replay, same_outcome
from rules.engine.model import Candidate, Decision, MatchedRule
from rules.models import DecisionRecord
from tests.support import agent_api, decide

HARD = MatchedRule(key="high_risk_keyword", priority=10, category="compliance", outcome="human_handoff", shadow=False)
SHADOW = MatchedRule(key="watch", priority=20, category="quality", outcome="intent_clarify", shadow=True)
BASE = Decision(
    point="intent_routing",
    decision="human_handoff",
    ruled_by="hard_rule",
    rule=HARD,
    matched_rules=(HARD, SHADOW),
    candidate=Candidate("general_query", 0.8),
    overridden=True,
    needs_candidate=False,
    reason="high_risk_keyword: keyword 投诉 (list high_risk)",
)


def test_a_decision_is_the_same_outcome_as_itself_whatever_the_reason_says():
    assert same_outcome(BASE, BASE)
    assert same_outcome(BASE, BASE._replace(reason="worded another way"))


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(BASE._replace(decision="general_query"), id="another outcome"),
        pytest.param(BASE._replace(ruled_by="llm_candidate"), id="another ruled_by"),
        pytest.param(BASE._replace(rule=SHADOW), id="another deciding rule"),
        pytest.param(BASE._replace(rule=None), id="no deciding rule"),
        pytest.param(BASE._replace(matched_rules=(HARD,)), id="a matched rule fewer"),
        pytest.param(BASE._replace(matched_rules=(SHADOW, HARD)), id="matched rules in another order"),
        pytest.param(
            BASE._replace(matched_rules=(HARD, MatchedRule("watch", 20, "quality", "intent_clarify", shadow=False))),
            id="a shadow rule that now enforces",
        ),
        pytest.param(BASE._replace(overridden=False), id="overridden differs"),
    ],
)
def test_each_difference_in_the_outcome_is_a_different_outcome(changed):
    assert not same_outcome(BASE, changed)
    assert not same_outcome(changed, BASE)


def test_no_replay_is_never_the_same_outcome():
    assert not same_outcome(BASE, None)


# --- A log row that no longer says what its revision gives ---------------------------------------------


@pytest.fixture
def client(demo):
    return agent_api("bot")


def _made(client, body) -> DecisionRecord:
    response = decide(client, body)
    assert response.status_code == 201, response.content
    record = DecisionRecord.objects.get(pk=response.json()["id"])
    assert decision_replay(record=record).identical  # untouched, it agrees
    return record


# A log row is written once and never updated by the service; a test may change one to stand for a row
# damaged or tampered with after it was written.
@pytest.mark.parametrize(
    ("body", "tamper"),
    [
        pytest.param(
            {"point": "refund_approval", "facts": {"refund_amount": 800}},
            {"decision": "auto_approve"},
            id="stored outcome",
        ),
        pytest.param(
            {"point": "refund_approval", "facts": {"refund_amount": 800}},
            {"ruled_by": "default", "rule_key": ""},
            id="stored ruled_by and rule",
        ),
        pytest.param(
            {
                "point": "intent_routing",
                "input": "我要投诉",
                "candidate": {"decision": "general_query", "confidence": 0.9},
            },
            {"overridden": False},
            id="stored overridden",
        ),
        pytest.param(
            {"point": "refund_approval", "facts": {"refund_amount": 1}},
            {"facts": {"refund_amount": 900}},
            id="stored facts",
        ),
    ],
)
def test_a_log_row_whose_stored_outcome_differs_from_its_revision_replays_not_identical(client, body, tamper):
    record = _made(client, body)
    DecisionRecord.objects.filter(pk=record.pk).update(**tamper)
    record.refresh_from_db()
    assert decision_replay(record=record).identical is False
    replay = client.get(f"/api/v1/decisions/{record.pk}/replay").json()
    assert replay["identical"] is False, replay
    assert replay["recorded"] != replay["replayed"]

"""Which changes to a machine's guards and events need approval (rules/governance/guard_risk.py)."""

from __future__ import annotations

import copy

from rules.config.document.diff import config_diff
from rules.governance.guard_risk import guard_weakened
from rules.governance.risk import change_risks
from tests.support.documents import DEMO_DOCUMENT as DEMO
from tests.support.documents import machine, rule

DECIDED = {"requires_decision": {"point": "intent_routing", "outcomes": ["refund_request"]}}


def _base():
    """The demo with the refund rule made a risk rule (it routes to refund_review), a guard on the edge
    into refund_review, one into closed (where no high-risk rule routes) and an event into refund_review."""
    doc = copy.deepcopy(DEMO)
    rule(doc, "intent_routing", "refund_trigger")["category"] = "risk"
    after_sales = machine(doc, "after_sales")
    after_sales["guards"] = {
        "received": {"refund_review": copy.deepcopy(DECIDED)},
        "refund_review": {"closed": copy.deepcopy(DECIDED)},
    }
    after_sales["events"] = [
        {"name": "refund_asked", "from": ["received"], "to": "refund_review", "guard": copy.deepcopy(DECIDED)}
    ]
    return doc


def _risks(edit):
    before = _base()
    after = copy.deepcopy(before)
    edit(machine(after, "after_sales"))
    return [r.why for r in change_risks(before, after, config_diff(before, after))]


WHY = "removes or weakens the guard of %s, into a state where a high-risk rule sends sessions"


def test_removing_the_guard_into_a_routed_state_is_high_risk():
    assert _risks(lambda m: m["guards"].pop("received")) == [WHY % "received → refund_review"]


def test_accepting_another_outcome_or_another_point_is_weakening():
    def more(m):
        m["guards"]["received"]["refund_review"]["requires_decision"]["outcomes"].append("general_query")

    assert _risks(more) == [WHY % "received → refund_review"]

    def event(m):
        m["events"][0]["guard"]["requires_decision"]["point"] = "refund_approval"

    assert _risks(event) == [WHY % "refund_asked"]


def test_a_guard_made_stricter_or_one_into_an_unrouted_state_is_not():
    assert _risks(lambda m: m["guards"]["received"]["refund_review"].update(requires_fields=["order_id"])) == []
    assert _risks(lambda m: m["guards"].pop("refund_review")) == []
    assert _risks(lambda m: m["events"].append({"name": "x", "from": ["received"], "to": "refund_review"})) == []


def test_guard_weakened():
    assert guard_weakened({"requires_fields": ["a", "b"]}, {"requires_fields": ["a"]})
    assert not guard_weakened({"requires_fields": ["a"]}, {"requires_fields": ["a", "b"]})
    assert guard_weakened(DECIDED, None)
    assert not guard_weakened(None, DECIDED)

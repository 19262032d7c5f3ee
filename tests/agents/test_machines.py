from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from rules.config.machine_definitions import machine_problems
from rules.config.machines import machine_save
from rules.models import StateMachine

AFTER_SALES = {
    "states": ["init", "intent_clarify", "received", "refund_review", "human_handoff", "closed", "escalated"],
    "initial_state": "init",
    "handoff_state": "human_handoff",
    "terminal_states": ["closed"],
    "transitions": {
        "init": ["intent_clarify", "received", "human_handoff"],
        "intent_clarify": ["received", "human_handoff"],
        "received": ["refund_review", "human_handoff", "closed"],
        "refund_review": ["closed", "human_handoff", "escalated"],
        "human_handoff": ["closed", "escalated"],
        "escalated": ["closed"],
    },
    "actions": {},
    "timeouts": {},
}


def test_the_seed_machine_is_sound():
    assert machine_problems(**AFTER_SALES) == {}


def test_unreachable_states_are_named():
    transitions = {**AFTER_SALES["transitions"], "received": ["human_handoff", "closed"]}
    problems = machine_problems(**{**AFTER_SALES, "transitions": transitions})
    assert problems == {"transitions": "Not reachable from the initial state 'init': refund_review."}


def test_terminal_states_cannot_move_and_transitions_name_declared_states():
    transitions = {**AFTER_SALES["transitions"], "closed": ["init"], "init": ["limbo"]}
    problems = machine_problems(**{**AFTER_SALES, "transitions": transitions})
    assert problems["terminal_states"] == "Terminal states cannot have outgoing transitions: closed."
    assert problems["transitions"] == "Transitions name undeclared states: limbo."


def test_initial_and_handoff_must_exist():
    problems = machine_problems(**{**AFTER_SALES, "initial_state": "start", "handoff_state": "humans"})
    assert problems["initial_state"] == "'start' is not one of the states."
    assert problems["handoff_state"] == "'humans' is not one of the states."


@pytest.mark.django_db
def test_machine_save_validates_and_records_history(actor):
    machine = machine_save(machine=StateMachine(key="after_sales", **AFTER_SALES), actor=actor, reason="seed flow")
    assert machine.history.first().history_change_reason == "seed flow"
    machine.timeouts = {"ghost": 30}
    with pytest.raises(ValidationError, match="Timeouts given for undeclared states: ghost"):
        machine_save(machine=machine, actor=actor, reason="bad")


def test_timeouts_must_be_finite():
    problems = machine_problems(**{**AFTER_SALES, "timeouts": {"init": float("inf")}})
    assert problems == {"timeouts": "Each timeout must be a positive number of seconds."}


@pytest.mark.django_db
def test_a_state_that_sessions_are_in_cannot_be_removed(actor):
    from django.utils import timezone

    from agents.runtimes.services import agent_create
    from agents.sessions.models import Session

    machine = machine_save(machine=StateMachine(key="after_sales", **AFTER_SALES), actor=actor, reason="seed flow")
    agent, _ = agent_create(name="bot", point_keys=[], actor=actor, reason="t")
    Session.objects.create(agent=agent, key="s", machine=machine, state="escalated", state_entered_at=timezone.now())
    machine.states = [s for s in AFTER_SALES["states"] if s != "escalated"]
    machine.transitions = {
        k: [t for t in v if t != "escalated"] for k, v in AFTER_SALES["transitions"].items() if k != "escalated"
    }
    with pytest.raises(ValidationError, match="Sessions are still in these states: escalated"):
        machine_save(machine=machine, actor=actor, reason="drop escalation")

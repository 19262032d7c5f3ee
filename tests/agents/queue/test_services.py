"""The human queue services against the real database: claim, release, return to the bot, resolve."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agents.errors import ClaimedByOther, IllegalTransition, NotInQueue, SessionHandedOff
from agents.queue.models import QueueEvent
from agents.queue.selectors import human_queue_list
from agents.queue.services import queue_claim, queue_release, queue_resolve, queue_return
from agents.runtimes.services import agent_create
from agents.sessions.interrupts import session_report_anomaly
from agents.sessions.models import Session, Transition, TransitionKind
from agents.sessions.selectors import session_timeline
from agents.sessions.services import session_create, session_transition
from decision_service.errors import PermissionDenied
from rules.config.runtime import engines
from rules.config.yaml_import import config_import

DEMO = Path(__file__).resolve().parents[3] / "demo" / "after_sales.yaml"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def bot(db):
    config_import(text=DEMO.read_text(encoding="utf-8"), source="test", actor=None, reason="test")
    agent, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    return agent


def operator(username: str):
    """A staff user in the queue_operators group (which has agents.work_human_queue)."""
    user = get_user_model().objects.create_user(username=username, password=f"{username}-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name="queue_operators"))
    return user


@pytest.fixture
def other_user(db):
    return operator("li")


def waiting(bot, key: str = "c1") -> Session:
    """An after_sales session the agent moved to human_handoff (which allows closed and escalated)."""
    session_create(agent=bot, machine_key="after_sales", session_id=key)
    session_transition(agent=bot, session_id=key, to="human_handoff", expected_state="init")
    return Session.objects.get(key=key)


def test_claim_assigns_the_session_and_others_see_who(bot, staff_user, other_user):
    session = waiting(bot)
    queue_claim(session_pk=session.pk, user=staff_user)
    session.refresh_from_db()
    assert session.claimed_by == staff_user and session.claimed_at is not None
    assert session.state == "human_handoff" and session.seq == 1  # not a move
    with pytest.raises(ClaimedByOther) as refused:
        queue_claim(session_pk=session.pk, user=other_user)
    assert refused.value.extra["claimed_by"] == "ops"
    queue_claim(session_pk=session.pk, user=staff_user)  # again: nothing new
    events = list(QueueEvent.objects.filter(session=session).values_list("kind", "actor"))
    assert events == [("claim", "operator:ops")]


def test_release_only_by_the_holder_then_anyone_may_claim(bot, staff_user, other_user):
    session = waiting(bot)
    queue_claim(session_pk=session.pk, user=staff_user)
    with pytest.raises(ClaimedByOther):
        queue_release(session_pk=session.pk, user=other_user)
    queue_release(session_pk=session.pk, user=staff_user, note="lunch")
    session.refresh_from_db()
    assert session.claimed_by is None
    queue_claim(session_pk=session.pk, user=other_user)
    kinds = [e.queue_event.kind for e in session_timeline(session) if e.kind == "queue"]
    assert kinds == ["claim", "release", "claim"]


def test_return_to_the_bot_moves_the_session_restarts_anomalies_and_clears_the_claim(bot, staff_user):
    session = waiting(bot)
    session_report_anomaly(agent=bot, session_id="c1", code="invalid_json")
    queue_claim(session_pk=session.pk, user=staff_user)
    move = queue_return(session_pk=session.pk, user=staff_user, state="escalated", note="customer calmed down")
    assert (move.from_state, move.state, move.seq, move.kind) == ("human_handoff", "escalated", 2, "return")
    session.refresh_from_db()
    assert session.state == "escalated" and session.anomaly_count == 0 and session.claimed_by is None
    t = Transition.objects.get(session=session, seq=2)
    assert (t.kind, t.actor, t.reason) == (TransitionKind.RETURN, "operator:ops", "customer calmed down")
    assert not human_queue_list().filter(pk=session.pk).exists()


def test_return_only_to_a_non_terminal_state_the_machine_allows(bot, staff_user):
    session = waiting(bot)
    for state in ("closed", "received", "no_such_state"):
        with pytest.raises(IllegalTransition) as refused:
            queue_return(session_pk=session.pk, user=staff_user, state=state)
        assert refused.value.extra["allowed_transitions"] == ["escalated"]
    session.refresh_from_db()
    assert session.state == "human_handoff" and session.seq == 1


def test_resolve_ends_the_session_with_the_note(bot, staff_user):
    session = waiting(bot)
    with pytest.raises(IllegalTransition):
        queue_resolve(session_pk=session.pk, user=staff_user, state="escalated", note="x")
    move = queue_resolve(session_pk=session.pk, user=staff_user, state="closed", note="refunded by phone")
    assert move.state == "closed" and move.kind == "resolve"
    t = Transition.objects.get(session=session, seq=move.seq)
    assert t.actor == "operator:ops" and t.reason == "refunded by phone"
    with pytest.raises(NotInQueue):
        queue_claim(session_pk=session.pk, user=staff_user)


def test_someone_elses_session_cannot_be_returned_or_resolved(bot, staff_user, other_user):
    session = waiting(bot)
    queue_claim(session_pk=session.pk, user=other_user)
    with pytest.raises(ClaimedByOther):
        queue_return(session_pk=session.pk, user=staff_user, state="escalated")
    with pytest.raises(ClaimedByOther):
        queue_resolve(session_pk=session.pk, user=staff_user, state="closed", note="n")


def test_a_session_outside_the_handoff_state_is_not_in_the_queue(bot, staff_user):
    session = session_create(agent=bot, machine_key="after_sales", session_id="c2")
    with pytest.raises(NotInQueue):
        queue_claim(session_pk=session.pk, user=staff_user)


def test_an_agent_cannot_move_a_claimed_session_out_of_the_queue(bot, staff_user):
    session = waiting(bot)
    queue_claim(session_pk=session.pk, user=staff_user)
    with pytest.raises(SessionHandedOff):
        session_transition(agent=bot, session_id="c1", to="escalated", expected_state="human_handoff")
    session.refresh_from_db()
    assert (session.state, session.claimed_by) == ("human_handoff", staff_user)
    # The person's own move out ends the claim.
    queue_return(session_pk=session.pk, user=staff_user, state="escalated")
    session.refresh_from_db()
    assert session.claimed_by is None


def test_queue_filters_and_reasons(bot, staff_user):
    mine = waiting(bot, "a")
    waiting(bot, "b")
    queue_claim(session_pk=mine.pk, user=staff_user)
    assert [s.key for s in human_queue_list()] == ["a", "b"]
    assert [s.key for s in human_queue_list(holder="mine", user=staff_user)] == ["a"]
    assert [s.key for s in human_queue_list(holder="unclaimed")] == ["b"]
    assert [s.queue_reason for s in human_queue_list()] == ["agent", "agent"]
    session_create(agent=bot, machine_key="after_sales", session_id="c3")
    for _ in range(3):  # after_sales hands off at 3 anomalies
        session_report_anomaly(agent=bot, session_id="c3", code="x")
    assert [s.key for s in human_queue_list(reason="model_failure")] == ["c3"]
    assert human_queue_list(reason="rule").count() == 0


def test_working_the_queue_needs_the_permission(bot, other_user):
    session = waiting(bot)
    bystander = get_user_model().objects.create_user(username="viewer", password="viewer-password-1", is_staff=True)
    for step in (
        lambda: queue_claim(session_pk=session.pk, user=bystander),
        lambda: queue_release(session_pk=session.pk, user=bystander),
        lambda: queue_return(session_pk=session.pk, user=bystander, state="escalated"),
        lambda: queue_resolve(session_pk=session.pk, user=bystander, state="closed", note="n"),
    ):
        with pytest.raises(PermissionDenied):
            step()
    queue_claim(session_pk=session.pk, user=other_user)  # the group's members may

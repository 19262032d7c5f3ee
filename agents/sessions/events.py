"""Events: a machine's named moves (``StateMachine.events``), sent by an agent instead of a target state.

An event names the states it may be sent in and the one it moves to; the move it makes is an ordinary
move along an edge of the transition table (the validator refuses an event whose edge is not there), so
every invariant of ``agents.sessions.services`` holds: the session's lock, the compare-and-set on
``seq``, one ``Transition`` row per move, the agent's Idempotency-Key. In order, a request is refused when
the session is not in ``expected_state`` (``state_mismatch``), has ended, is with a person, when the
event is unknown or not sendable in this state (``event_not_allowed``, always an anomaly: the events one
may send are in the machine; the session object's ``allowed_events`` lists them), when the event's
``updates`` are refused or leave its target's required fields missing (``invalid_fields``,
``fields_missing``: ``agents.sessions.field_updates``), or when a guard refuses — the edge's, then the
event's own, both judging the fields as the updates leave them (``guard_failed``, an anomaly when the
move was the model's proposal). The updates are written with the move or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.errors import EventNotAllowed, IllegalTransition
from agents.sessions.codes import EVENT_NOT_ALLOWED, PROPOSED_BY_MODEL
from agents.sessions.guards import edge_guard
from agents.sessions.keys import WriteKey, keyed
from agents.sessions.models import Session
from agents.sessions.presenters import session_allowed_events  # the session object's list: one definition
from agents.sessions.services import (
    AgentRef,
    Move,
    _check_decision,
    _closed,
    _digest,
    _extra,
    _locked,
    _made,
    _mismatch,
    _move_replayed,
    _refuse_after_commit,
    anomaly_record,
    guarded_move,
    session_allowed_targets,
    session_handed_off,
)
from decision_service import tracing
from decision_service.errors import DomainError


@dataclass(frozen=True)
class EventMove:
    event: str
    move: Move


def session_event(
    *,
    agent: AgentRef,
    session_id: str,
    event: str,
    expected_state: str,
    decision_id: Any = None,
    proposed_by: str = "runtime",
    idempotency_key: str = "",
    updates: Mapping[str, Any] | None = None,
) -> EventMove:
    """Send ``event`` to the session: the move the event names, if it is in ``expected_state``, the event
    may be sent there and the guards let it through; with ``updates``, those fields set in the same move,
    as a transition's (``agents.sessions.services.guarded_move``)."""
    with tracing.span("arbiter.session.event") as span:
        if span is not None:
            span.set_attributes(
                {"arbiter.session.id": session_id, "arbiter.event": event, "arbiter.state.from": expected_state}
            )
        marked = {"proposed_by": proposed_by} if proposed_by == PROPOSED_BY_MODEL else {}
        body = {"event": event, "expected_state": expected_state, "decision_id": str(decision_id), **marked}
        # The updates join the digest only when sent, so a key stored before events took them still replays.
        digest = _digest({**body, "updates": dict(updates)} if updates else body)
        key = WriteKey(agent.pk, idempotency_key, "event", digest, session_id)

        def attempt() -> Move:
            with transaction.atomic():
                session = _locked(agent, session_id)
                if (earlier := key.earlier()) is not None:
                    return _move_replayed(session, earlier)
                if decision_id is not None:
                    _check_decision(agent, session, decision_id)
                outcome = _event_locked(session, agent, event, expected_state, decision_id, proposed_by, key, updates)
                outcome = _made(session, key, outcome)
            return _refuse_after_commit(outcome)

        sent = EventMove(event=event, move=keyed(attempt))
        if span is not None:
            span.set_attribute("arbiter.state", sent.move.state)
        return sent


def _declared(session: Session, name: str) -> Mapping[str, Any] | None:
    return next((e for e in session.machine.events or [] if e.get("name") == name), None)


def _event_locked(
    session: Session,
    agent: AgentRef,
    name: str,
    expected_state: str,
    decision_id: Any,
    proposed_by: str,
    key: WriteKey,
    updates: Mapping[str, Any] | None,
) -> Move | DomainError:
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in session.machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, f"the event '{name}'"):
        return handed_off
    event = _declared(session, name)
    if event is None or session.state not in event.get("from", []):
        allowed = session_allowed_events(session)
        known = "cannot be sent" if event is not None else "is not an event of this machine"
        detail = f"'{name}' {known} in '{session.state}'; allowed: {', '.join(allowed) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=EVENT_NOT_ALLOWED, detail=detail)
        return EventNotAllowed(
            detail + ".",
            extra=_extra(session, allowed_events=session_allowed_events(session), handed_off=handoff is not None),
        )
    to = event["to"]
    if to not in session_allowed_targets(session):
        # The validator keeps every event on an edge of the transition table; the table has the last word.
        return IllegalTransition(f"'{session.state}' → '{to}' is not allowed.", extra=_extra(session))
    return guarded_move(
        session,
        agent,
        to=to,
        guards=[(edge_guard(session, to), to), (event.get("guard") or {}, f"event {name}")],
        updates=updates,
        reason=f"event {name}",
        decision_id=decision_id,
        proposed_by=proposed_by,
        idempotency_key=key.key,
        digest=key.digest,
    )

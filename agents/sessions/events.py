"""Events: a machine's named moves (``StateMachine.events``), sent by an agent instead of a target state.

An event names the states it may be sent in and the one it moves to; the move it makes is an ordinary
move along an edge of the transition table (the validator refuses an event whose edge is not there), so
every invariant of ``agents.sessions.services`` holds: the session's lock, the compare-and-set on
``seq``, one ``Transition`` row per move, the agent's Idempotency-Key. In order, a request is refused when
the session is not in ``expected_state`` (``state_mismatch``), has ended, is with a person, when the
event is unknown or not sendable in this state (``event_not_allowed``, always an anomaly: the events one
may send are in the machine), or when a guard refuses — the edge's, then the event's own
(``guard_failed``, an anomaly when the move was the model's proposal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.errors import EventNotAllowed, IllegalTransition
from agents.sessions.codes import EVENT_NOT_ALLOWED, PROPOSED_BY_MODEL
from agents.sessions.field_updates import fields_apply
from agents.sessions.guards import edge_guard
from agents.sessions.keys import WriteKey, keyed
from agents.sessions.models import Session, TransitionKind
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
    guard_refusal,
    session_allowed_targets,
    session_handed_off,
    session_move,
)
from decision_service.errors import DomainError


@dataclass(frozen=True)
class EventMove:
    event: str
    move: Move


def session_allowed_events(session: Session) -> list[str]:
    """The events that may be sent in the session's state, in the machine's order (none once it ended)."""
    if session.state in session.machine.terminal_states:
        return []
    return [e["name"] for e in session.machine.events or [] if session.state in e.get("from", [])]


def session_event(
    *,
    agent: AgentRef,
    session_id: str,
    event: str,
    expected_state: str,
    decision_id: Any = None,
    proposed_by: str = "runtime",
    idempotency_key: str = "",
) -> EventMove:
    """Send ``event`` to the session: the move the event names, if it is in ``expected_state``, the event
    may be sent there and the guards let it through."""
    marked = {"proposed_by": proposed_by} if proposed_by == PROPOSED_BY_MODEL else {}
    digest = _digest({"event": event, "expected_state": expected_state, "decision_id": str(decision_id), **marked})
    key = WriteKey(agent.pk, idempotency_key, "event", digest, session_id)

    def attempt() -> Move:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return _move_replayed(session, earlier)
            if decision_id is not None:
                _check_decision(agent, session, decision_id)
            outcome = _event_locked(session, agent, event, expected_state, decision_id, proposed_by, key)
            outcome = _made(session, key, outcome)
        return _refuse_after_commit(outcome)

    return EventMove(event=event, move=keyed(attempt))


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
    # The target's required fields hold for an event as for any move (no updates ride on an event yet).
    applied = fields_apply(session=session, agent=agent, updates=None, entering=to)
    if isinstance(applied, DomainError):
        return applied
    for guard, on in ((edge_guard(session, to), to), (event.get("guard") or {}, f"event {name}")):
        refusal = guard_refusal(session, agent, guard, decision_id=decision_id, proposed_by=proposed_by, on=on)
        if refusal is not None:
            return refusal
    return session_move(
        session,
        to=to,
        kind=TransitionKind.MOVE,
        actor=agent.name,
        reason=f"event {name}",
        decision_id=decision_id,
        idempotency_key=key.key,
        request_digest=key.digest,
    )

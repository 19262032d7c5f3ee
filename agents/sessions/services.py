"""Sessions under explicit state machines. Nothing else changes a session's state.

Every move takes the session's lock (``SELECT … FOR UPDATE`` on PostgreSQL, the database write lock on
SQLite: see ``sessions_lock``) and then writes with a compare-and-set on ``seq``, so concurrent
callers from one ``expected_state`` get exactly one success: the others see the new state and are told
``state_mismatch``. ``seq`` is assigned here, one per move,
and each move is a ``Transition`` row unique on (session, seq): strictly increasing and gap-free.

Refusals that are a model's mistake (an illegal move, an action outside the whitelist) are recorded
as anomalies *and* refused: the anomaly is committed first, then the error is raised. When a session
collects its machine's ``max_anomalies``, it is handed to the machine's handoff state (model_failure).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.errors import (
    ActionNotAllowed,
    GuardFailed,
    IllegalTransition,
    SessionExists,
    SessionHandedOff,
    UnknownMachine,
    UnknownSession,
)
from agents.sessions.codes import ACTION_NOT_ALLOWED, GUARD_FAILED, ILLEGAL_TRANSITION, PROPOSED_BY_MODEL
from agents.sessions.field_updates import fields_apply
from agents.sessions.guards import edge_guard, guard_failure
from agents.sessions.handoff import REASON_STARTED, SESSION_HANDED_OFF, handoff_refusal
from agents.sessions.keys import WriteKey, keyed
from agents.sessions.models import Session, TransitionKind

# The move and the anomaly live below the services (agents.sessions.moves); callers import them from here.
from agents.sessions.moves import AgentRef, Move, _closed, _extra, _mismatch, anomaly_record, session_move
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.reads import session_lock
from decision_service.digests import canonical_digest
from decision_service.errors import DomainError, InvalidRequest
from rules.models import DecisionRecord, StateMachine

SESSION_ID = (
    r"^[^/\u0000]*[^/\u0000\t-\r \u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    r"[^/\u0000]*\Z"
)
SESSION_ID_MESSAGE = "Must not contain '/'."
_SESSION_ID = re.compile(SESSION_ID)


def session_id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot name a session (blank, a "/", a NUL), or None."""
    return None if _SESSION_ID.search(session_id) else SESSION_ID_MESSAGE


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def session_context_problem(context: Any) -> str | None:
    """Why ``context`` cannot be stored (PostgreSQL cannot store NUL in JSON: refused before the insert)."""
    return "Must not contain NUL characters." if _holds_nul(context) else None


def session_allowed_targets(session: Session) -> list[str]:
    if session.state in session.machine.terminal_states:
        return []
    return list(session.machine.transitions.get(session.state, []))


def session_allowed_actions(session: Session) -> list[str]:
    return list(session.machine.actions.get(session.state, []))


def _digest(body: Mapping[str, Any]) -> str:
    return canonical_digest(body, text="ascii")  # ASCII: a body may hold lone surrogates


def session_create(
    *,
    agent: AgentRef,
    machine_key: str,
    session_id: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> Session:
    errors = {}
    if session_id and (problem := session_id_problem(session_id)):
        errors["session_id"] = [problem]
    if problem := session_context_problem(context or {}):
        errors["context"] = [problem]
    if errors:
        raise InvalidRequest("The session cannot be created as asked.", errors=errors)
    machine = StateMachine.objects.filter(key=machine_key).first()
    if machine is None:
        raise UnknownMachine(f"There is no state machine '{machine_key}'.")
    key = session_id or uuid.uuid4().hex
    session = Session(
        agent_id=agent.pk,
        key=key,
        machine=machine,
        state=machine.initial_state,
        context=dict(context or {}),
        state_entered_at=timezone.now(),
        handoff_reason=REASON_STARTED if machine.initial_state == machine.handoff_state else "",
    )
    try:
        with transaction.atomic():
            session.save(force_insert=True)
    except IntegrityError as exc:
        raise SessionExists(f"Session '{key}' already exists.") from exc
    return session


def _locked(agent: AgentRef, session_id: str) -> Session:
    if "\x00" in session_id:
        # No session id holds a NUL (session_id_problem), and PostgreSQL cannot compare text holding one.
        raise UnknownSession(f"This agent has no session {session_id!r}.")
    session = session_lock(agent_id=agent.pk, key=session_id)
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session


def _refuse_after_commit(outcome: Move | DomainError) -> Move:
    if isinstance(outcome, DomainError):
        raise outcome
    return outcome


def session_transition(
    *,
    agent: AgentRef,
    session_id: str,
    to: str,
    expected_state: str,
    reason: str = "",
    decision_id: Any = None,
    idempotency_key: str = "",
    updates: Mapping[str, Any] | None = None,
    proposed_by: str = "runtime",
) -> Move:
    """Move a session to ``to`` if it is in ``expected_state``, the machine allows the move and the edge's
    guard (``agents.sessions.guards``) lets it through; with ``updates``, set those fields in the same move
    (``agents.sessions.field_updates``: all or nothing, checked before ``to``'s required fields and the
    guard are)."""
    # The digest's form is the one transitions stored before keys were per agent (migration 0014): the
    # updates and a mark of the model's proposal join it only when sent, so a key stored then still replays.
    marked = {"proposed_by": proposed_by} if proposed_by == PROPOSED_BY_MODEL else {}
    body = {"to": to, "expected_state": expected_state, "reason": reason, "decision_id": str(decision_id), **marked}
    digest = _digest({**body, "updates": dict(updates)} if updates else body)
    key = WriteKey(agent.pk, idempotency_key, "transition", digest, session_id)

    def attempt() -> Move:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return _move_replayed(session, earlier)
            if decision_id is not None:
                _check_decision(agent, session, decision_id)
            outcome = _transition_locked(
                session, agent, to, expected_state, reason, decision_id, idempotency_key, digest, updates, proposed_by
            )
            outcome = _made(session, key, outcome)
        return _refuse_after_commit(outcome)

    return keyed(attempt)


def _made(session: Session, key: WriteKey, outcome: Move | DomainError) -> Move | DomainError:
    """A move just made, with its key stored and the session object it answers with."""
    if isinstance(outcome, DomainError):
        return outcome
    # A move with updates is replayed with what they normalised.
    key.store(seq=outcome.seq, **({} if outcome.normalised is None else {"normalised": outcome.normalised}))
    return replace(outcome, session=session_state(session))


def _move_replayed(session: Session, earlier: dict[str, Any]) -> Move:
    """The answer to a retry of a move made under its key: the move as made, the session as it is now."""
    done = session.transitions.get(seq=earlier["seq"])
    return Move(
        from_state=done.from_state,
        state=done.to_state,
        seq=done.seq,
        kind=done.kind,
        session=session_state(session),
        normalised=earlier.get("normalised"),
    )


def _check_decision(agent: AgentRef, session: Session, decision_id: Any) -> None:
    """A move may cite a decision of the same agent about this session (or about none); anything else
    would fail the foreign key only at commit, as a server error, or link another agent's log."""
    cited = DecisionRecord.objects.filter(pk=decision_id, agent_id=agent.pk, session_id__in=["", session.key])
    if not cited.exists():
        raise InvalidRequest(
            "decision_id names no decision this agent made about this session.",
            errors={"decision_id": ["Unknown decision for this session."]},
        )


def _transition_locked(
    session: Session,
    agent: AgentRef,
    to: str,
    expected_state: str,
    reason: str,
    decision_id: Any,
    idempotency_key: str,
    digest: str,
    updates: Mapping[str, Any] | None = None,
    proposed_by: str = "runtime",
) -> Move | DomainError:
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in session.machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, f"a move to '{to}'"):
        return handed_off
    allowed = session_allowed_targets(session)
    if to not in allowed:
        detail = f"'{session.state}' → '{to}' is not allowed; allowed: {', '.join(allowed) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=ILLEGAL_TRANSITION, detail=detail)
        return IllegalTransition(
            detail + ".",
            extra=_extra(session, allowed_transitions=session_allowed_targets(session), handed_off=handoff is not None),
        )
    return guarded_move(
        session,
        agent,
        to=to,
        guards=[(edge_guard(session, to), to)],
        updates=updates,
        reason=reason,
        decision_id=decision_id,
        proposed_by=proposed_by,
        idempotency_key=idempotency_key,
        digest=digest,
    )


def guarded_move(
    session: Session,
    agent: AgentRef,
    *,
    to: str,
    guards: list[tuple[Mapping[str, Any], str]],
    updates: Mapping[str, Any] | None,
    reason: str,
    decision_id: Any,
    proposed_by: str,
    idempotency_key: str,
    digest: str,
) -> Move | DomainError:
    """An agent's move along an edge the caller found legal (a transition, an event), under its lock:
    ``updates`` checked (all or nothing, with ``to``'s required fields as the updates leave them), then
    each guard in ``guards`` (the guard, and what it guards for the refusal: the target or the event) on
    those same values, then the move written with its updates — or the first refusal, nothing moved.

    The one place a move's fields and its guards meet, so a transition and an event cannot differ."""
    applied = fields_apply(session=session, agent=agent, updates=updates, entering=to)
    if isinstance(applied, DomainError):
        return applied
    for guard, on in guards:
        refusal = guard_refusal(
            session, agent, guard, decision_id=decision_id, proposed_by=proposed_by, on=on, values=applied.values
        )
        if refusal is not None:
            return refusal
    move = session_move(
        session,
        to=to,
        kind=TransitionKind.MOVE,
        actor=agent.name,
        reason=reason,
        decision_id=decision_id,
        idempotency_key=idempotency_key,
        request_digest=digest,
        **applied.move_fields(),
    )
    return move if updates is None else replace(move, normalised=applied.normalised)


def guard_refusal(
    session: Session,
    agent: AgentRef,
    guard: Mapping[str, Any],
    *,
    decision_id: Any,
    proposed_by: str,
    on: str,
    values: Mapping[str, Any] | None = None,
) -> GuardFailed | None:
    """The refusal of a move ``guard`` does not let through (``on``: the target state or the event), with
    an anomaly when the move was the model's proposal; None when the guard lets it through."""
    failure = guard_failure(session, guard, agent_id=agent.pk, decision_id=decision_id, values=values)
    if failure is None:
        return None
    detail = f"{failure.guard} refused {on!r} in '{session.state}': {failure.reason}"
    handoff = None
    if proposed_by == PROPOSED_BY_MODEL:
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=GUARD_FAILED, detail=detail)
    return GuardFailed(
        detail + ".",
        extra=_extra(session, guard=failure.guard, reason=failure.reason, handed_off=handoff is not None),
    )


def session_action(*, agent: AgentRef, session_id: str, action: str) -> SessionState:
    """Check an action against the current state's whitelist; returns the session object when allowed
    (its ``allowed_actions`` is the whitelist)."""
    with transaction.atomic():
        session = _locked(agent, session_id)
        whitelist = session_allowed_actions(session)
        if action in whitelist:
            return session_state(session)
        detail = f"'{action}' is not allowed in '{session.state}'; allowed: {', '.join(whitelist) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=ACTION_NOT_ALLOWED, detail=detail)
        refusal = ActionNotAllowed(
            detail + ".",
            extra=_extra(session, allowed_actions=session_allowed_actions(session), handed_off=handoff is not None),
        )
    raise refusal


def session_handed_off(
    session: Session, agent: AgentRef, attempted: str, *, point: str = ""
) -> SessionHandedOff | None:
    """Refuse an agent's move of a session a person has (agents.sessions.handoff), as an anomaly: the
    refusal to raise once the anomaly is committed, or None when the session is not handed off."""
    refusal = handoff_refusal(session, attempted=attempted)
    if refusal is not None:
        detail = f"{attempted} while handed off ({refusal.extra['handoff_reason']})"
        anomaly_record(
            session, agent=agent, session_id=session.key, point=point, code=SESSION_HANDED_OFF, detail=detail
        )
        refusal.extra["session"] = session_state(session)
    return refusal

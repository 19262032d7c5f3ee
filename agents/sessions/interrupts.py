"""The session's detours and the agent's own reports: an interrupt sets the current state aside, a resume
comes back to it, a reported anomaly counts toward the machine's model-failure policy. Each under the
session's lock, with the agent's Idempotency-Key (``agents.sessions.keys``), as every move is
(``agents.sessions.services``, whose invariants hold here too).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agents.errors import IllegalTransition, NothingToResume
from agents.sessions.field_updates import fields_missing_refusal
from agents.sessions.keys import WriteKey, keyed
from agents.sessions.models import Session, TransitionKind
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.services import (
    AgentRef,
    Move,
    _closed,
    _digest,
    _extra,
    _locked,
    _made,
    _mismatch,
    _move_replayed,
    _refuse_after_commit,
    anomaly_record,
    session_handed_off,
    session_move,
)
from decision_service.errors import DomainError


def session_interrupt(
    *, agent: AgentRef, session_id: str, to: str, expected_state: str, reason: str = "", idempotency_key: str = ""
) -> Move:
    """Set the current state aside and move to ``to``; ``session_resume`` comes back to it."""
    digest = _digest({"to": to, "expected_state": expected_state, "reason": reason})
    key = WriteKey(agent.pk, idempotency_key, "interrupt", digest, session_id)

    def attempt() -> Move:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return _move_replayed(session, earlier)
            outcome = _made(session, key, _interrupt_locked(session, agent, to, expected_state, reason))
        return _refuse_after_commit(outcome)

    return keyed(attempt)


def _interrupt_locked(
    session: Session, agent: AgentRef, to: str, expected_state: str, reason: str
) -> Move | DomainError:
    machine = session.machine
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, f"an interrupt into '{to}'"):
        return handed_off
    if to not in machine.states or to in machine.terminal_states or to == session.state:
        return IllegalTransition(
            f"Cannot interrupt into '{to}': it must be another, non-terminal state of {machine.key}.",
            extra=_extra(session),
        )
    if missing := fields_missing_refusal(session, to):
        return missing
    return session_move(
        session,
        to=to,
        kind=TransitionKind.INTERRUPT,
        actor=agent.name,
        reason=reason,
        stack=[*session.stack, session.state],
    )


def session_resume(
    *, agent: AgentRef, session_id: str, expected_state: str, reason: str = "", idempotency_key: str = ""
) -> Move:
    """Go back to the state the latest interrupt set aside."""
    key = WriteKey(
        agent.pk, idempotency_key, "resume", _digest({"expected_state": expected_state, "reason": reason}), session_id
    )

    def attempt() -> Move:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return _move_replayed(session, earlier)
            outcome = _made(session, key, _resume_locked(session, agent, expected_state, reason))
        return _refuse_after_commit(outcome)

    return keyed(attempt)


def _resume_locked(session: Session, agent: AgentRef, expected_state: str, reason: str) -> Move | DomainError:
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in session.machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, "a resume"):
        return handed_off
    if not session.stack:
        return NothingToResume("The session has no interrupted state to go back to.", extra=_extra(session))
    if missing := fields_missing_refusal(session, session.stack[-1]):
        return missing
    return session_move(
        session,
        to=session.stack[-1],
        kind=TransitionKind.RESUME,
        actor=agent.name,
        reason=reason,
        stack=session.stack[:-1],
    )


@dataclass(frozen=True)
class AnomalyReported:
    """A reported anomaly: whether it handed the session to a person, and the session now."""

    handed_off: bool
    session: SessionState


def session_report_anomaly(
    *, agent: AgentRef, session_id: str, code: str, detail: str = "", raw: str = "", idempotency_key: str = ""
) -> AnomalyReported:
    """An anomaly the agent detected itself (invalid JSON, schema violation, retries exhausted)."""
    key = WriteKey(
        agent.pk, idempotency_key, "anomaly", _digest({"code": code, "detail": detail, "raw": raw}), session_id
    )

    def attempt() -> AnomalyReported:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return AnomalyReported(handed_off=earlier["handed_off"], session=session_state(session))
            handoff = anomaly_record(session, agent=agent, session_id=session.key, code=code, detail=detail, raw=raw)
            key.store(handed_off=handoff is not None)
            return AnomalyReported(handed_off=handoff is not None, session=session_state(session))

    return keyed(attempt)

"""The write every change of a session ends in: one move (``session_move``), and the anomaly that may
make one (``anomaly_record``) — apart from ``agents.sessions.services`` (which re-exports them and whose
module docstring states the invariants) so that the fields writer (``agents.sessions.field_updates``)
can record its anomalies below the services that call it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from agents.errors import SessionClosed, StateMismatch
from agents.sessions.codes import ILLEGAL_MOVE_CODES, MODEL_FAILURE, SYSTEM_MODEL_FAILURE
from agents.sessions.handoff import handoff_reason_for
from agents.sessions.models import Anomaly, Session, Transition, TransitionKind
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.reads import session_seen
from agents.sessions.spans import move_traced
from agents.webhooks.emit import webhook_event
from agents.webhooks.models import EventKind
from decision_service import metrics, tracing


class AgentRef(Protocol):
    """The agent a call is made for: an ``AgentRuntime`` or the API's ``AgentPrincipal`` (its id and name)."""

    @property
    def pk(self) -> Any: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Move:
    from_state: str
    state: str
    seq: int
    kind: str
    # The session once the move is made (agents.sessions.presenters), set by the public services.
    session: SessionState | None = None
    # Which normalisers changed which of the move's field updates (agents.sessions.field_updates).
    normalised: dict[str, list[str]] | None = None


# Not blank (Python's str.strip() whitespace, spelt out so that JSON Schema's regex agrees), no "/" (the
# id is a path segment of every other session route) and no NUL: docs/openapi.yaml has the same pattern.
def _extra(session: Session, **more: Any) -> dict[str, Any]:
    """A refusal's extension members: the session as it is now, under the caller's lock (after any
    anomaly the refusal recorded), so the runtime needs no read before its next step."""
    return {"state": session.state, "seq": session.seq, **more, "session": session_state(session)}


def _mismatch(session: Session, expected: str) -> StateMismatch:
    return StateMismatch(
        f"The session is in '{session.state}' (seq {session.seq}), not '{expected}'; use its session object or read "
        "it again, and retry.",
        extra=_extra(session),
    )


def _closed(session: Session) -> SessionClosed:
    return SessionClosed(f"The session ended in '{session.state}'.", extra=_extra(session))


def session_move(
    session: Session,
    *,
    to: str,
    kind: str,
    actor: str,
    reason: str = "",
    decision_id: Any = None,
    stack: list[str] | None = None,
    idempotency_key: str = "",
    request_digest: str = "",
    now: dt.datetime | None = None,
    field_values: dict[str, Any] | None = None,
    fields_changed: dict[str, Any] | None = None,
) -> Move:
    """Write one move. The caller holds the session's lock and has checked that the move is allowed.

    ``field_values``: the session's fields after the move, as ``agents.sessions.field_updates`` checked
    them (and ``fields_changed``, masked, for the move's row); a ``fields`` move stays in its state."""
    with tracing.span("arbiter.session.move") as span:
        if span is not None:
            machine = session.machine.key
            move_traced(
                span,
                session_id=session.key,
                machine=machine,
                from_state=session.state,
                to=to,
                kind=kind,
                decision_id=decision_id,
            )
        now = now or timezone.now()
        from_state, seq = session.state, session.seq + 1
        fields: dict[str, Any] = {"state": to, "seq": seq, "updated_at": now}
        stayed = None
        if kind != TransitionKind.FIELDS:  # a fields write is no new stay: the state's timeout keeps running
            fields["state_entered_at"] = now
            entered = session.state_entered_at  # None only on a session built from a guess, which never moves
            stayed = (now - entered).total_seconds() if entered is not None else None
        if stack is not None:
            fields["stack"] = stack
        if field_values is not None:
            fields["field_values"] = field_values
        # Why the session waits for a person, set by every move into the handoff state; any move out clears it.
        fields["handoff_reason"] = handoff_reason_for(kind=kind) if to == session.machine.handoff_state else ""
        # A claim is on a wait in the human queue: any move ends that wait (a new one starts unclaimed).
        fields["claimed_by"] = None
        fields["claimed_at"] = None
        # Compare-and-set on seq: even without a row lock (SQLite), two writers cannot both win.
        if Session.objects.filter(pk=session.pk, seq=session.seq).update(**fields) != 1:
            session.refresh_from_db()
            raise _mismatch(session, from_state)
        Transition.objects.create(
            session=session,
            seq=seq,
            from_state=from_state,
            to_state=to,
            kind=kind,
            actor=actor,
            reason=reason,
            decision_id=decision_id,
            idempotency_key=idempotency_key,
            request_digest=request_digest,
            fields_changed=fields_changed or {},
        )
        transaction.on_commit(partial(metrics.session_moved, machine=session.machine.key, kind=kind))
        if stayed is not None:
            left = partial(metrics.session_left_state, machine=session.machine.key, state=from_state, seconds=stayed)
            transaction.on_commit(left)
        if connection.vendor == "postgresql":  # the next decide here guesses the state this move committed
            transaction.on_commit(partial(session_seen, session.agent_id, session.key, to))
        event = _event_kind(kind=kind, to=to, handoff_state=session.machine.handoff_state)
        if event is not None:
            data = {
                "session_id": session.key,
                "machine": session.machine.key,
                "from_state": from_state,
                "state": to,
                "seq": seq,
                "transition_kind": kind,
                "actor": actor,
                "reason": reason,
                "handoff_reason": fields["handoff_reason"] or None,
                "at": now.isoformat(),
            }
            webhook_event(event, agent_id=session.agent_id, data=data)
        for name, value in fields.items():
            setattr(session, name, value)
        return Move(from_state=from_state, state=to, seq=seq, kind=kind)


def _event_kind(*, kind: str, to: str, handoff_state: str) -> str | None:
    """The webhook event a move is (agents.webhooks), if any: at most one a move, and none for an ordinary
    move, which then looks nothing up."""
    if kind == TransitionKind.RETURN:
        return EventKind.SESSION_RETURNED
    if kind == TransitionKind.RESOLVE:
        return EventKind.SESSION_RESOLVED
    if to != handoff_state:
        return None
    return EventKind.SESSION_TIMED_OUT if kind == TransitionKind.TIMEOUT else EventKind.SESSION_HANDED_OFF


def anomaly_record(
    session: Session | None,
    *,
    agent: AgentRef,
    session_id: str,
    code: str,
    detail: str = "",
    raw: str = "",
    point: str = "",
    decision_id: Any = None,
    counted: bool = True,
) -> Move | None:
    """Record a model anomaly; apply the machine's model-failure policy. Returns the handoff move, if any.

    ``counted=False``: recorded, but not the model's or the agent's doing (a rule's or the default's
    decision the machine could not follow): it never counts toward ``max_anomalies``."""
    Anomaly.objects.create(
        agent_id=agent.pk,
        session_id=session_id,
        point=point,
        code=code,
        detail=detail[:2000],
        raw=raw,
        decision_id=decision_id,
    )
    transaction.on_commit(partial(metrics.anomaly_recorded, code=code))
    if session is not None and code in ILLEGAL_MOVE_CODES:  # by the state it was refused in, before any handoff
        illegal = partial(metrics.session_illegal_move, machine=session.machine.key, state=session.state, code=code)
        transaction.on_commit(illegal)
    if session is None or not counted:
        return None
    Session.objects.filter(pk=session.pk).update(anomaly_count=F("anomaly_count") + 1)
    session.anomaly_count += 1
    machine = session.machine
    ended = session.state in machine.terminal_states or session.state == machine.handoff_state
    if ended or session.anomaly_count < machine.max_anomalies:
        return None
    return session_move(
        session,
        to=machine.handoff_state,
        kind=TransitionKind.MODEL_FAILURE,
        actor=SYSTEM_MODEL_FAILURE,
        reason=f"{MODEL_FAILURE}: {session.anomaly_count} anomalies (latest {code})",
    )

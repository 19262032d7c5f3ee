"""The session object: how every answer about a session describes it (``SessionState`` in openapi.yaml).

One presenter, so a move, a decide, an action check, an interrupt, a resume, an anomaly report, a
refusal and the session's own routes cannot drift apart: what a runtime needs for its next step without
reading the session again — where it is, what it may do next, whether a person has it, the hints.
"""

from __future__ import annotations

from typing import Any, TypedDict

from agents.sessions.feedback import session_feedback
from agents.sessions.fields import fields_missing_next
from agents.sessions.handoff import session_handoff_reason
from agents.sessions.models import Session


class SessionState(TypedDict):
    session_id: str
    machine: str
    state: str
    seq: int
    allowed_transitions: list[str]
    allowed_actions: list[str]
    allowed_events: list[str]
    handed_off: bool
    handoff_reason: str | None
    claimed_by: str | None
    feedback: list[str]
    fields: dict[str, Any]
    missing: dict[str, list[str]]


def session_allowed_events(session: Session) -> list[str]:
    """The events that may be sent in the session's state, in the machine's order (none once it ended).
    A column of the machine the session is read with: no statement."""
    if session.state in session.machine.terminal_states:
        return []
    return [e["name"] for e in session.machine.events or [] if session.state in e.get("from", [])]


def session_state(session: Session, *, feedback: list[str] | None = None) -> SessionState:
    """``session`` as answers show it. ``feedback``: the hints when the caller has them already (the
    decide path counts them from what it read); otherwise they are read now (one statement).

    ``claimed_by`` costs a read only when a person has claimed the session (then it is handed off).
    ``allowed_events``, ``fields`` and ``missing`` cost none: the values are a column of the session's row
    (``agents.sessions.fields``); ``missing`` names, for the current state and each state the session
    may move to next, the required fields it lacks (``{}`` when nothing is missing) — what a runtime's
    prompt asks the user for."""
    machine = session.machine
    terminal = session.state in machine.terminal_states
    targets = [] if terminal else list(machine.transitions.get(session.state, []))
    reason = session_handoff_reason(session)
    claimed_by = session.claimed_by if session.claimed_by_id is not None else None
    return {
        "session_id": session.key,
        "machine": machine.key,
        "state": session.state,
        "seq": session.seq,
        "allowed_transitions": targets,
        "allowed_actions": list(machine.actions.get(session.state, [])),
        "allowed_events": session_allowed_events(session),
        "handed_off": reason is not None,
        "handoff_reason": reason,
        "claimed_by": claimed_by.get_username() if claimed_by is not None else None,
        "feedback": session_feedback(session) if feedback is None else list(feedback),
        "fields": dict(session.field_values or {}),
        "missing": fields_missing_next(machine, session.field_values or {}, [session.state, *targets]),
    }


def with_session(body: dict[str, Any], session: Session, *, feedback: list[str] | None = None) -> dict[str, Any]:
    """``body`` with the session object under ``session`` (an answer's or a problem's extension member)."""
    return {**body, "session": session_state(session, feedback=feedback)}

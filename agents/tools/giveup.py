"""Where a session goes when a tool call gives up: the contract's ``on_exhausted``.

- ``handoff`` (the default): the machine's handoff state, a ``tool_gave_up`` move (handoff reason
  ``tool_failure``: the human queue says why);
- ``{event: E}``: the machine's event, through the event machinery (its edge's and its own guards, the
  target's required fields: ``agents.sessions.services.guarded_move``);
- ``{state: S}``: a move to ``S`` along the transition table, its edge's guard judging it.

When that move cannot be made (the event cannot be sent in this state, the table has no such edge, a
guard or a required field refuses it) the refusal is recorded as an anomaly
(``tool_give_up_move_refused``, not counted against the model) and the session is handed off instead: a
call that gave up never leaves the session where the agent would call again. A session that has ended or
is already with a person stays where it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.sessions.guards import edge_guard
from agents.sessions.models import Session, TransitionKind
from agents.sessions.services import AgentRef, anomaly_record, guarded_move, session_allowed_targets, session_move
from agents.tools.codes import SYSTEM_TOOL_GAVE_UP, TOOL_GIVE_UP_MOVE_REFUSED
from agents.tools.models import ToolCall
from decision_service.errors import DomainError
from rules.config.tool_definitions import HANDOFF


def give_up_move(session: Session, agent: AgentRef, call: ToolCall, on_exhausted: Any) -> None:
    """Move the session (locked by the caller) as ``on_exhausted`` says; see the module docstring."""
    machine = session.machine
    if session.state in machine.terminal_states or session.state == machine.handoff_state:
        return
    reason = f"tool {call.tool} gave up (operation {call.operation_id}, attempt {call.attempt})"
    # ``handoff`` (or anything the validator would not have let through): straight to a person.
    if on_exhausted != HANDOFF and isinstance(on_exhausted, Mapping) and len(on_exhausted) == 1:
        ((kind, target),) = on_exhausted.items()
        refused = _move(session, agent, kind, str(target), reason)
        if refused is None:
            return
        anomaly_record(
            session,
            agent=agent,
            session_id=session.key,
            code=TOOL_GIVE_UP_MOVE_REFUSED,
            detail=f"{reason}: on_exhausted {kind} {target!r} cannot be followed from '{session.state}' "
            f"({refused}); handed off instead",
            counted=False,
        )
    session_move(
        session,
        to=machine.handoff_state,
        kind=TransitionKind.TOOL_GAVE_UP,
        actor=SYSTEM_TOOL_GAVE_UP,
        reason=reason,
    )


def _move(session: Session, agent: AgentRef, kind: str, target: str, reason: str) -> str | None:
    """Make the ``event`` or ``state`` move; None when made, else why not."""
    machine = session.machine
    guards: list[tuple[Mapping[str, Any], str]]
    if kind == "event":
        event = next((e for e in machine.events or [] if e.get("name") == target), None)
        if event is None or session.state not in event.get("from", []):
            return f"the event '{target}' cannot be sent in '{session.state}'"
        to = event["to"]
        guards = [(edge_guard(session, to), to), (event.get("guard") or {}, f"event {target}")]
        reason = f"{reason}: event {target}"
    elif kind == "state":
        to = target
        if to == session.state:
            return None  # already there
        guards = [(edge_guard(session, to), to)]
    else:
        return f"unknown on_exhausted kind {kind!r}"
    if to not in session_allowed_targets(session):
        return f"'{session.state}' → '{to}' is not allowed"
    outcome = guarded_move(
        session,
        agent,
        to=to,
        guards=guards,
        updates=None,
        reason=reason,
        decision_id=None,
        proposed_by="runtime",
        idempotency_key="",
        digest="",
    )
    if isinstance(outcome, DomainError):
        return f"{outcome.code}: {outcome.detail}"
    return None

"""Guards: what an agent's move needs besides the transition table (``rules.config.event_definitions``).

A guard is read from the session's machine — on the edge (``guards: {from: {to: …}}``) and, for an event,
on the event — and judged here, under the session's lock the move already holds:
- ``requires_fields``: each named field holds a value that is valid for its declaration now;
- ``requires_decision``: the move cites (``decision_id``) a decision that this agent made about this
  session, at the named point, in the state the session is in — made since it last entered it — whose
  final outcome is one of the named outcomes.
Pure reads: nothing is written here; the services turn a failure into ``guard_failed`` (and, when the
move was the model's proposal, an anomaly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.sessions.models import Session
from rules.engine.field_values import field_spec, field_value_check
from rules.models import DecisionRecord

REQUIRES_FIELDS = "requires_fields"
REQUIRES_DECISION = "requires_decision"


@dataclass(frozen=True)
class GuardFailure:
    guard: str  # requires_fields | requires_decision
    reason: str


def session_field_values(session: Session) -> dict[str, Any]:
    """The session's field values by name, as stored (only checked values are: agents.sessions.fields)."""
    return dict(session.field_values or {})


def edge_guard(session: Session, to: str) -> Mapping[str, Any]:
    """The guard on the edge from the session's state to ``to`` (empty when there is none)."""
    guards = session.machine.guards or {}
    return (guards.get(session.state) or {}).get(to) or {}


def guard_failure(
    session: Session,
    guard: Mapping[str, Any],
    *,
    agent_id: Any,
    decision_id: Any,
    values: Mapping[str, Any] | None = None,
) -> GuardFailure | None:
    """Why ``guard`` refuses this move of ``session``, or None when it lets it through. ``values``: the
    fields as the move would leave them (its updates applied), by default the session's own."""
    names, needed = guard.get(REQUIRES_FIELDS), guard.get(REQUIRES_DECISION)
    if names and (reason := _fields_reason(session, names, values)):
        return GuardFailure(REQUIRES_FIELDS, reason)
    if needed and (reason := _decision_reason(session, needed, agent_id=agent_id, decision_id=decision_id)):
        return GuardFailure(REQUIRES_DECISION, reason)
    return None


def _fields_reason(session: Session, names: list[str], values: Mapping[str, Any] | None) -> str | None:
    values = session_field_values(session) if values is None else dict(values)
    declared = {d["name"]: d for d in session.machine.fields or []}
    missing, invalid = [], []
    for name in names:
        if values.get(name) is None:
            missing.append(name)
        elif name not in declared or not field_value_check(field_spec(declared[name]), values[name]).ok:
            invalid.append(name)
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing)}")
    if invalid:
        parts.append(f"not valid: {', '.join(invalid)}")
    return "; ".join(parts) or None


def _decision_reason(session: Session, needed: Mapping[str, Any], *, agent_id: Any, decision_id: Any) -> str | None:
    point, outcomes = needed["point"], list(needed["outcomes"])
    wanted = f"a decision of {point} ({' or '.join(outcomes)}) made in '{session.state}'"
    if decision_id is None:
        return f"cite {wanted} as decision_id"
    cited = (
        DecisionRecord.objects.filter(pk=decision_id, agent_id=agent_id, session_id=session.key)
        .only("point", "session_state", "decision", "created_at")
        .first()
    )
    if cited is None:
        return f"the decision cited is not one of this session's; cite {wanted}"
    if cited.point != point:
        return f"the decision cited was made at {cited.point}; cite {wanted}"
    if cited.session_state != session.state or cited.created_at < session.state_entered_at:
        return f"the decision cited was made in another state ('{cited.session_state or 'none'}'); cite {wanted}"
    if cited.decision not in outcomes:
        return f"the decision cited is {cited.decision}; cite {wanted}"
    return None

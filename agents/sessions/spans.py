"""The ``arbiter.*`` attributes of the sessions' spans (``decision_service.tracing``): configuration keys,
ids, states and codes — never the input text, facts, a candidate's reason or field values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from decision_service import tracing

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from rules.decisions.compute import DecideRequest
    from rules.decisions.decide import DecideResult

HANDED_OFF = "session_handed_off"
# The moves that hand a session to a person because something failed (not a runtime's own handoff).
FAILED_MOVES = frozenset({"model_failure", "timeout"})


def decide_traced(span: Span, request: DecideRequest, result: DecideResult) -> None:
    """The decide span's attributes; a decide that leaves its session with a person is an error (its trace
    is kept whatever the sampling ratio)."""
    decision = result.decision
    record = result.record
    session = result.session
    tracing.set_attributes(
        span,
        {
            "arbiter.point": request.point,
            "arbiter.session.id": request.session_id or None,
            "arbiter.decision": decision.decision,
            "arbiter.ruled_by": decision.ruled_by,
            "arbiter.decision.id": str(record.pk) if record is not None else None,
            "arbiter.revision": result.revision,
            "arbiter.needs_candidate": decision.needs_candidate,
            "arbiter.overridden": decision.overridden,
            "arbiter.replayed": result.replayed,
            "arbiter.evaluated_us": result.evaluated_us,
            "arbiter.state": session["state"] if session is not None else None,
        },
    )
    if session is not None and session.get("handed_off"):
        span.set_attribute("arbiter.session.handed_off", True)
        tracing.mark_error(span, HANDED_OFF)


def move_traced(
    span: Span, *, session_id: str, machine: str, from_state: str, to: str, kind: str, decision_id: Any
) -> None:
    tracing.set_attributes(
        span,
        {
            "arbiter.session.id": session_id,
            "arbiter.machine": machine,
            "arbiter.state.from": from_state,
            "arbiter.state": to,
            "arbiter.move.kind": kind,
            "arbiter.decision.id": str(decision_id) if decision_id is not None else None,
        },
    )
    if kind in FAILED_MOVES:
        tracing.mark_error(span, kind)

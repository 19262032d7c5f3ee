"""A session in its machine's handoff state is the operators' until a person returns or resolves it.

Whatever put it there — a decision's outcome mapped to the handoff state (``rule``), the point's
fallback (``fallback``), the timeout sweep (``timeout``), the model-failure policy (``model_failure``),
the agent's own move, interrupt or resume (``agent``), or a machine whose sessions start there
(``started``) — the agent may no longer move it: a move, an interrupt, a resume or a decision with
``apply`` is refused with ``409 session_handed_off`` and recorded as an anomaly (trying to drive a
conversation a person has is the model's or the agent's mistake). Only the human queue
(``agents.queue.services``: ``queue_return`` / ``queue_resolve``) leads out, through the machine's own
transitions.

``Session.handoff_reason`` says why a session waits: it is set by every move into the handoff state
(``session_move`` asks ``handoff_reason_for``) and cleared by every move out. Rows written before every
path set it may hold an empty reason in the handoff state: they are shown as ``unknown``.
"""

from __future__ import annotations

from agents.errors import SessionHandedOff
from agents.sessions.models import Session, TransitionKind

SESSION_HANDED_OFF = "session_handed_off"  # the refusal's code, and the anomaly's

REASON_RULE = "rule"
REASON_FALLBACK = "fallback"
REASON_TIMEOUT = "timeout"
REASON_MODEL_FAILURE = "model_failure"
REASON_AGENT = "agent"
REASON_STARTED = "started"
REASON_APPROVAL = "approval"  # a tool call waits for a person's approval (agents.tools.approvals)
REASON_TOOL_FAILURE = "tool_failure"  # a tool call gave up and its contract says handoff
REASON_UNKNOWN = "unknown"

_REASON_BY_KIND = {
    TransitionKind.DECISION: REASON_RULE,
    TransitionKind.FALLBACK: REASON_FALLBACK,
    TransitionKind.TIMEOUT: REASON_TIMEOUT,
    TransitionKind.MODEL_FAILURE: REASON_MODEL_FAILURE,
    TransitionKind.MOVE: REASON_AGENT,
    TransitionKind.INTERRUPT: REASON_AGENT,
    TransitionKind.RESUME: REASON_AGENT,
    TransitionKind.APPROVAL: REASON_APPROVAL,
    TransitionKind.TOOL_GAVE_UP: REASON_TOOL_FAILURE,
}


def handoff_reason_for(*, kind: str) -> str:
    """Why a session that a move of ``kind`` takes into its handoff state waits for a person."""
    # A person's own moves (return, resolve) leave the handoff state; should a machine ever lead one
    # back into it, the kind itself is the most honest reason.
    return _REASON_BY_KIND.get(kind, kind)  # type: ignore[call-overload]


def session_handoff_reason(session: Session) -> str | None:
    """The reason as agents and staff see it: ``None`` outside the handoff state, ``unknown`` for a row
    that entered it before every path recorded why."""
    if session.state != session.machine.handoff_state:
        return None
    return session.handoff_reason or REASON_UNKNOWN


def handoff_refusal(session: Session, *, attempted: str) -> SessionHandedOff | None:
    """The refusal of an agent's ``attempted`` move of ``session`` while a person has it, else ``None``.
    The caller holds the session's lock and records the anomaly before raising."""
    if session.state != session.machine.handoff_state:
        return None
    reason = session_handoff_reason(session)
    return SessionHandedOff(
        f"The session is waiting for a person in '{session.state}' (handed off: {reason}); {attempted} is "
        "refused until an operator returns or resolves it.",
        extra={"state": session.state, "seq": session.seq, "handoff_reason": reason},
    )

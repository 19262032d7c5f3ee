"""Tool-call attempts on the sessions' timeline (``agents.sessions.timeline``), two streams.

- ``tool_invocation``: an attempt started (at its ``sequence_id``), with the call's input and the breaker
  as it was; ``outcome`` and what follows it show the result if it came before the page was read.
- ``error_handled`` (a failed result: an error, or output its schema refused) or ``tool_result`` (an ok
  one): the result came (at the attempt's ``result_sequence_id``). A failure says what the error policy
  made of it: ``retry`` when another attempt followed (or is due), ``give_up`` when the operation ended.

Input, message and output summary were masked when written (``agents.tools``), the summary cut short.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.sessions.models import Session
from agents.sessions.timeline import TimelineEvent
from agents.tools.models import AttemptOutcome, ToolAttempt, ToolCallStatus
from rules.decisions.presenters import timestamp

TOOL_INVOCATION, TOOL_RESULT, ERROR_HANDLED = "tool_invocation", "tool_result", "error_handled"


def _started(session: Session, after: int) -> QuerySet[ToolAttempt]:
    return ToolAttempt.objects.filter(call__session=session, sequence_id__gt=after)


def _finished(session: Session, after: int) -> QuerySet[ToolAttempt]:
    return ToolAttempt.objects.filter(call__session=session, result_sequence_id__gt=after)


def attempts_newer(session: Session, after: int) -> QuerySet[Any]:
    return _started(session, after).values("pk")


def results_newer(session: Session, after: int) -> QuerySet[Any]:
    return _finished(session, after).values("pk")


def _common(a: ToolAttempt) -> dict[str, Any]:
    return {"operation_id": a.call.operation_id, "tool": a.tool, "attempt": a.attempt, "duration_ms": a.duration_ms}


def attempts_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = _started(session, after).select_related("call").order_by("sequence_id")[:limit]
    return [
        TimelineEvent(
            a.sequence_id,
            a.started_at,
            TOOL_INVOCATION,
            {
                **_common(a),
                "input": a.call.input,
                "breaker_state": a.breaker_state,
                "deadline": timestamp(a.deadline),
                "outcome": a.outcome or None,
                "output_summary": a.output_summary or None,
                "finished_at": timestamp(a.finished_at) if a.finished_at else None,
                "late": a.finished_at > a.deadline if a.finished_at else None,
            },
        )
        for a in rows
    ]


def tool_next(a: ToolAttempt) -> str:
    """``retry`` when another attempt of the failed one's operation followed (or is due), else ``give_up``."""
    call = a.call
    return "retry" if call.attempt > a.attempt or call.status == ToolCallStatus.RETRY_WAIT else "give_up"


def results_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = _finished(session, after).select_related("call").order_by("result_sequence_id")[:limit]
    events = []
    for a in rows:
        assert a.result_sequence_id is not None and a.finished_at is not None  # the filter says so
        if a.outcome == AttemptOutcome.OK:
            data = {**_common(a), "outcome": a.outcome, "output_summary": a.output_summary or None}
            events.append(TimelineEvent(a.result_sequence_id, a.finished_at, TOOL_RESULT, data))
        else:
            data = {
                **_common(a),
                "code": a.error_code,
                "declared": a.declared,
                "message": a.message,
                "next": tool_next(a),
            }
            events.append(TimelineEvent(a.result_sequence_id, a.finished_at, ERROR_HANDLED, data))
    return events

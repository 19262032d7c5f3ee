"""Reading reported events: a session's, in the service-wide order, for its timeline and the admin."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.sessions.models import Session
from agents.sessions.timeline import TimelineEvent
from agents.traces.models import TraceEvent


def trace_event_data(event: TraceEvent) -> dict[str, Any]:
    """A recorded event as the timeline shows it (its text was masked when it was recorded)."""
    data: dict[str, Any] = {
        "event_id": event.event_id or None,
        "turn_id": event.turn_id or None,
        "status": event.status,
        "attributes": event.attributes,
    }
    if event.type == "llm_call":
        data.update(
            model=event.name,
            point=event.point or None,
            prompt_version=event.prompt_version or None,
            latency_ms=event.duration_ms,
        )
    else:
        data.update(tool=event.name or None, duration_ms=event.duration_ms, error_code=event.error_code or None)
    data["reported"] = True  # told by the runtime, not seen by Arbiter
    return data


def trace_events_newer(session: Session, after: int) -> QuerySet[Any]:
    """For ``changes``: a row iff the session has a reported event above ``after`` (its index)."""
    return TraceEvent.objects.filter(session=session, sequence_id__gt=after).values("pk")


def trace_events_after(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    """The timeline stream of reported events: ``session``'s with a ``sequence_id`` above ``after``,
    oldest first, at most ``limit``."""
    rows = TraceEvent.objects.filter(session=session, sequence_id__gt=after).order_by("sequence_id")[:limit]
    return [
        TimelineEvent(sequence_id=r.sequence_id or 0, at=r.created_at, type=r.type, data=trace_event_data(r))
        for r in rows
    ]


def trace_event_list(*, session: Session) -> list[TraceEvent]:
    return list(TraceEvent.objects.filter(session=session).order_by("sequence_id"))

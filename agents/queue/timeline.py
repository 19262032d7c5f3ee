"""The human queue's timeline stream (``agents.sessions.timeline``): a person claiming or releasing a
session, approving or rejecting a tool call — type ``queue``, its ``kind`` saying which. The operator's
note, kept as written, is masked with the built-in patterns."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.queue.models import QueueEvent
from agents.sessions.models import Session
from agents.sessions.timeline import TimelineEvent, TimelineMasking

QUEUE = "queue"


def _queue_events(session: Session, after: int) -> QuerySet[QueueEvent]:
    return QueueEvent.objects.filter(session=session, sequence_id__gt=after)


def queue_events_newer(session: Session, after: int) -> QuerySet[Any]:
    return _queue_events(session, after).values("pk")


def queue_events_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = list(_queue_events(session, after).order_by("sequence_id")[:limit])
    if not rows:
        return []
    masked = TimelineMasking()
    return [
        TimelineEvent(
            q.sequence_id,
            q.created_at,
            QUEUE,
            {"kind": q.kind, "actor": q.actor, "state": q.state, "note": masked(q.note)},
        )
        for q in rows
    ]

"""A room above sessions adds its own events to the timeline (``timeline_stream_register``, as
agents.traces does from ready()): they come in the service-wide order among the built-in ones, page by
page, and a waiting ``changes`` request asks a stream without a ``newer`` query by reading it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from agents.sessions import timeline
from agents.sessions.models import Session
from agents.sessions.timeline import TimelineEvent, session_has_events_after, timeline_stream_register
from tests.support import post

pytestmark = pytest.mark.django_db


@pytest.fixture
def reported() -> Iterator[list[int]]:
    """A stream of ``llm_call`` events at the sequence ids in the list (a stand-in for runtime reports)."""
    numbers: list[int] = []
    saved = dict(timeline._STREAMS)

    def stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
        at = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
        return [TimelineEvent(n, at, "llm_call", {"model": "m1"}) for n in sorted(numbers) if n > after][:limit]

    timeline_stream_register("test_reports", stream)
    yield numbers
    timeline._STREAMS.clear()
    timeline._STREAMS.update(saved)


def test_a_registered_stream_joins_the_order_and_the_pages(client, reported):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    first = post(client, "/api/v1/sessions/s1/anomalies", {"code": "invalid_json"})
    assert first.status_code == 201
    session = Session.objects.get(key="s1")
    # A number taken between the two anomalies (another session's event): the report's.
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s2"}).status_code == 201
    assert post(client, "/api/v1/sessions/s2/anomalies", {"code": "invalid_json"}).status_code == 201
    (between,) = timeline.session_events(Session.objects.get(key="s2"), limit=10)
    reported.append(between.sequence_id)
    assert post(client, "/api/v1/sessions/s1/anomalies", {"code": "invalid_json"}).status_code == 201
    events = client.get("/api/v1/sessions/s1/timeline").json()["events"]
    assert [e["type"] for e in events] == ["anomaly", "llm_call", "anomaly"]
    assert events[1] == {
        "sequence_id": between.sequence_id,
        "type": "llm_call",
        "at": "2026-12-04T00:00:00Z",
        "model": "m1",
    }
    paged = client.get("/api/v1/sessions/s1/timeline", {"after": events[0]["sequence_id"], "limit": 1}).json()
    assert [e["type"] for e in paged["events"]] == ["llm_call"] and paged["has_more"] is True
    # A stream without a ``newer`` query is read while a changes request waits.
    last = events[-1]["sequence_id"]
    assert not session_has_events_after(session, after=last)
    reported.append(last + 5)
    assert session_has_events_after(session, after=last)

"""``trace_events_after``: the reported events as a timeline stream — a session's, after a sequence id,
oldest first, at most ``limit``, each in the shared shape (sequence_id, at, type, data)."""

from __future__ import annotations

import pytest

from agents.sessions.models import Session
from agents.traces.selectors import trace_events_after

pytestmark = pytest.mark.django_db


def _report(client, session, events):
    answer = client.post(f"/api/v1/sessions/{session}/trace", {"events": events}, format="json")
    assert answer.status_code == 200, answer.json()


def test_the_stream_pages_by_sequence_id(client, session, keep_all):
    model = {"gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 7}
    _report(client, session, [{"type": "llm_call", "attributes": model, "turn_id": f"t{n}"} for n in range(3)])
    _report(client, session, [{"type": "tool_invocation", "tool": "crm", "duration_ms": 5}])
    s = Session.objects.get(key=session)
    first = trace_events_after(s, 0, 2)
    assert [e.type for e in first] == ["llm_call", "llm_call"]
    rest = trace_events_after(s, first[-1].sequence_id, 10)
    assert [e.type for e in rest] == ["llm_call", "tool_invocation"]
    assert first[0].sequence_id < first[1].sequence_id < rest[0].sequence_id < rest[1].sequence_id
    assert first[0].data["model"] == "m" and first[0].data["attributes"]["gen_ai.usage.output_tokens"] == 7
    assert rest[1].data["tool"] == "crm" and rest[1].data["duration_ms"] == 5
    assert trace_events_after(s, rest[-1].sequence_id, 10) == []


def test_another_session_s_events_are_not_in_the_stream(client, session, keep_all):
    client.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "t2"}, format="json")
    _report(client, "t2", [{"type": "tool_invocation", "tool": "crm"}])
    assert trace_events_after(Session.objects.get(key=session), 0, 10) == []

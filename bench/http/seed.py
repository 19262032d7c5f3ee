"""What bench/http/run.py writes besides the demo and the sessions: the tool-call result path's operations,
and the database settled before the first path is measured."""

from __future__ import annotations

from typing import Any


def attempts_in_flight(agent: Any, count: int, now: Any) -> None:
    """One verify_phone operation with its first attempt in flight per session ``q<i>``, named ``r<i>``:
    what ``tool_call_result`` reports on, written as the check writes them (its own path is measured apart)."""
    import datetime as dt

    from agents.sessions.models import Session
    from agents.tools.contracts import input_digest
    from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
    from rules.models import ConfigRevision

    revision = ConfigRevision.objects.order_by("-number").values_list("number", flat=True).first()
    sessions = dict(Session.objects.filter(key__startswith="q").values_list("key", "pk"))
    given = {"phone": "13800138000"}
    deadline = now + dt.timedelta(days=1)
    calls = ToolCall.objects.bulk_create(
        [
            ToolCall(
                operation_id=f"r{i}",
                agent=agent,
                session_id=sessions[f"q{i}"],
                tool="verify_phone",
                state="init",
                revision=revision,
                risk="read_only",
                input=given,
                input_digest=input_digest(given),
                status=ToolCallStatus.RUNNING,
                attempt=1,
                deadline=deadline,
            )
            for i in range(count)
        ],
        batch_size=5000,
    )
    ToolAttempt.objects.bulk_create(
        [
            ToolAttempt(
                call=call, attempt=1, tool="verify_phone", started_at=now, deadline=deadline, breaker_state="closed"
            )
            for call in calls
        ],
        batch_size=5000,
    )


def settle() -> None:
    """Write the loaded rows out and refresh the planner's statistics before any path runs, so the first
    path measured does not pay for the load (a checkpoint, autovacuum's analyze of the new rows)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("CHECKPOINT")

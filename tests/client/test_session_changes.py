"""``Session.changes()`` against the live server: what is new at once, and a long poll that a person
claiming the session ends — the session object then says it is handed off and who has it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from arbiter_client import Arbiter, AsyncArbiter

from agents.sessions.changes import changes_watch
from agents.sessions.models import Session
from tests.support.live_sqlite import connection_per_request


def test_changes_answers_at_once_with_what_is_new(bot: Arbiter) -> None:
    s = bot.session(machine="after_sales")
    bot.decide("intent_routing", input="我要投诉", session_id=s.session_id, apply=False)
    (decision,) = s.changes(wait=30)
    assert decision["type"] == "decision"
    assert s.timeline_cursor == decision["sequence_id"]
    assert s.changes() == [] and s.timeline() == []


def test_a_long_poll_ends_when_a_person_claims_the_session(live: Any, live_server: Any, bot: Arbiter, tmp_path) -> None:
    # Before the first request: a kept-alive connection stays with the server thread that first took it.
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        ops = live.staff("ops", "queue_operators")
        s = bot.session(machine="after_sales")
        s.move("human_handoff")
        assert [e["type"] for e in s.timeline()] == ["state_transition"]
        found: list[dict[str, Any]] = []
        waiting = threading.Thread(target=lambda: found.extend(s.changes(wait=30)), daemon=True)
        waiting.start()
        deadline = time.monotonic() + 20
        while not changes_watch._waiters:
            assert time.monotonic() < deadline and waiting.is_alive()
            time.sleep(0.01)
        ops.queue_claim(Session.objects.get(key=s.session_id).pk)
        waiting.join(30)
    assert [(e["type"], e["kind"]) for e in found] == [("queue", "claim")]
    assert s.handed_off is True and s.claimed_by == "ops"


def test_the_async_twin_reads_changes_too(live: Any, bot: Arbiter) -> None:
    token = bot.http.headers["Authorization"].removeprefix("Bearer ")
    s = bot.session(machine="after_sales")
    s.move("received")

    async def read() -> list[dict]:
        async with AsyncArbiter(live.url, token) as arbiter:
            joined = await arbiter.session(session_id=s.session_id)
            return await joined.changes(after=0)

    assert [e["type"] for e in asyncio.run(read())] == ["state_transition"]

"""``Session.timeline()`` against the live server: every page of the agent's timeline read in order, and a
second call that returns only what happened since (the last page's ``next`` is kept)."""

from __future__ import annotations

import asyncio

from arbiter_client import Arbiter, AsyncArbiter


def _events(bot: Arbiter, session_id: str, count: int) -> None:
    for n in range(count):
        # A rule decides (logged), and without apply the session does not move.
        bot.decide("intent_routing", input=f"我要投诉 {n}", session_id=session_id, apply=False)


def test_the_timeline_reads_every_page_and_then_only_what_is_new(bot: Arbiter) -> None:
    s = bot.session(machine="after_sales")
    _events(bot, s.session_id, 5)
    whole = bot.session_timeline(s.session_id, limit=100)
    assert [e["type"] for e in whole["events"]] == ["decision"] * 5 and not whole["has_more"]

    sent = bot.counter.requests
    paged = s.timeline(limit=2)
    assert paged == whole["events"]
    assert bot.counter.requests - sent == 3  # pages of 2, 2 and 1

    s.move("received")
    _events(bot, s.session_id, 1)
    since = s.timeline(limit=2)
    assert [e["type"] for e in since] == ["state_transition", "decision"]
    assert s.timeline() == []


def test_the_async_twin_reads_the_same_pages(live, bot: Arbiter) -> None:
    token = bot.http.headers["Authorization"].removeprefix("Bearer ")
    s = bot.session(machine="after_sales")
    _events(bot, s.session_id, 3)

    async def read() -> list[dict]:
        async with AsyncArbiter(live.url, token) as arbiter:
            joined = await arbiter.session(session_id=s.session_id)
            return await joined.timeline(limit=2)

    assert asyncio.run(read()) == bot.session_timeline(s.session_id)["events"]

"""``Session.trace_llm_call()`` and ``Session.trace()`` against the live server (real HTTP), sync and async:
the events land with their GenAI names, a turn is sent whole, and a repeat is recorded once."""

from __future__ import annotations

import asyncio

import pytest
from arbiter_client import Arbiter, AsyncArbiter, InvalidRequest, tool_event

from agents.traces.models import TraceEvent


@pytest.fixture(autouse=True)
def _keep_every_turn(settings):
    settings.ARBITER_TRACE_SAMPLE_RATIO = 1.0


def test_a_model_call_is_reported_with_its_genai_attributes(bot: Arbiter) -> None:
    s = bot.session(machine="after_sales")
    answer = s.trace_llm_call(
        model="qwen-max",
        prompt_version="intent-v3",
        input_tokens=812,
        output_tokens=96,
        latency_ms=640,
        point="intent_routing",
        provider="dashscope",
        turn_id="turn-1",
    )
    assert (answer["received"], answer["kept"], answer["dropped"]) == (1, 1, 0)
    event = TraceEvent.objects.get(session__key=s.session_id)
    assert (event.type, event.name, event.prompt_version, event.duration_ms, event.turn_id) == (
        "llm_call",
        "qwen-max",
        "intent-v3",
        640,
        "turn-1",
    )
    assert event.attributes["gen_ai.usage.output_tokens"] == 96
    assert event.attributes["gen_ai.provider.name"] == "dashscope"


def test_a_turn_is_reported_together_and_a_repeat_is_recorded_once(bot: Arbiter) -> None:
    s = bot.session(machine="after_sales")
    events = [
        tool_event("crm_lookup", duration_ms=320, error_code="PHONE_NOT_FOUND", event_id="t2-1"),
        tool_event("crm_lookup", error_code="PHONE_NOT_FOUND", handled=True, message="asked again", event_id="t2-2"),
    ]
    first = s.trace(events, turn_id="turn-2")
    again = s.trace(events, turn_id="turn-2")
    assert (first["kept"], first["failed_turns"], again["kept"], again["duplicates"]) == (2, 1, 0, 2)
    assert list(TraceEvent.objects.values_list("type", "status")) == [
        ("tool_invocation", "error"),
        ("error_handled", "error"),
    ]


def test_an_invalid_event_is_refused(bot: Arbiter) -> None:
    s = bot.session(machine="after_sales")
    with pytest.raises(InvalidRequest) as refused:
        s.trace([{"type": "llm_call", "attributes": {"gen_ai.request.model": "m", "gen_ai.colour": "red"}}])
    assert "events[0].attributes.gen_ai.colour" in refused.value.errors


def test_the_async_twin_reports_the_same(live, bot: Arbiter) -> None:
    token = bot.http.headers["Authorization"].removeprefix("Bearer ")
    s = bot.session(machine="after_sales")

    async def report() -> dict:
        async with AsyncArbiter(live.url, token) as arbiter:
            joined = await arbiter.session(session_id=s.session_id)
            return dict(await joined.trace_llm_call(model="qwen-max", output_tokens=5, status="error"))

    answer = asyncio.run(report())
    assert (answer["kept"], answer["failed_turns"]) == (1, 1)
    assert TraceEvent.objects.get().status == "error"

"""The client sends the trace context with its calls (sync and async) and keeps Arbiter's answer: a value the
caller gives, else the current OpenTelemetry span's; Arbiter's spans then join the agent's trace."""

from __future__ import annotations

import asyncio

import pytest
from arbiter_client import AsyncArbiter, trace_context
from opentelemetry.sdk.trace import TracerProvider

from tests.support.otlp import otlp_receiver
from tests.support.tracing import tracing_to

TRACE = "5c7e0a1b2c3d4e5f60718293a4b5c6d7"
GIVEN = f"00-{TRACE}-1112131415161718-01"


@pytest.fixture
def receiver():
    with otlp_receiver() as r:
        yield r


def _parent_of_server_span(receiver, trace_id: str) -> str:
    spans = receiver.spans(trace_id=trace_id, at_least=2)
    return next(s.parent_span_id for s in spans if s.name.startswith("POST "))


def test_a_given_traceparent_is_sent_and_arbiters_comes_back(live, live_server, receiver, monkeypatch) -> None:
    with tracing_to(receiver, monkeypatch, live_server=live_server):
        bot = live.agent("traced_bot")
        with trace_context(GIVEN):
            decided = bot.decide("intent_routing", input="close my order")
        assert decided["point"] == "intent_routing"
        returned = bot.last_traceparent
        assert returned is not None and returned.startswith(f"00-{TRACE}-")
    assert _parent_of_server_span(receiver, TRACE) == "1112131415161718"
    assert returned.split("-")[2] in {s.span_id for s in receiver.all()}


def test_the_current_opentelemetry_span_is_the_parent(live, live_server, receiver, monkeypatch) -> None:
    agent_tracer = TracerProvider().get_tracer("agent")  # the agent's own SDK, apart from Arbiter's
    with tracing_to(receiver, monkeypatch, live_server=live_server):
        bot = live.agent("otel_bot")
        with agent_tracer.start_as_current_span("agent turn") as turn:
            bot.decide("intent_routing", input="close my order")
        context = turn.get_span_context()
    assert _parent_of_server_span(receiver, f"{context.trace_id:032x}") == f"{context.span_id:016x}"


def test_the_async_client_sends_it_too(live, live_server, receiver, monkeypatch) -> None:
    with tracing_to(receiver, monkeypatch, live_server=live_server):
        token = live.agent("async_traced_bot").http.headers["Authorization"].split()[1]

        async def run() -> str | None:
            async with AsyncArbiter(live.url, token) as bot:
                with trace_context(GIVEN):
                    await bot.decide("intent_routing", input="close my order")
                return bot.last_traceparent

        returned = asyncio.run(run())
    assert returned is not None and returned.startswith(f"00-{TRACE}-")
    assert _parent_of_server_span(receiver, TRACE) == "1112131415161718"


def test_no_span_and_nothing_given_sends_no_traceparent(live, live_server, receiver, monkeypatch) -> None:
    with tracing_to(receiver, monkeypatch, live_server=live_server):
        bot = live.agent("untraced_bot")
        bot.decide("intent_routing", input="close my order")
        returned = bot.last_traceparent
    assert returned is not None
    server = next(s for s in receiver.spans(trace_id=returned.split("-")[1], at_least=1) if s.name.startswith("POST "))
    assert server.parent_span_id == ""


def test_a_malformed_value_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="traceparent"), trace_context("not-a-traceparent"):
        pass

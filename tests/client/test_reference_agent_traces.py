"""The reference agent's spans and Arbiter's make one trace: each turn, model call and tool run is a span
of the agent's SDK, and every request Arbiter served for it is the child of one of them."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
from examples.after_sales_agent.conversations import HERE
from examples.after_sales_agent.run import conversation_run
from tests.support import DEMO_TEXT
from tests.support.otlp import KIND_SERVER, otlp_receiver
from tests.support.tracing import tracing_to


@pytest.fixture
def live_config() -> str:
    return agent_config_text(DEMO_TEXT)


def test_arbiters_spans_are_children_of_the_agents(live, live_server, monkeypatch) -> None:
    exporter = InMemorySpanExporter()
    agent_traces = TracerProvider()
    agent_traces.add_span_processor(SimpleSpanProcessor(exporter))
    with otlp_receiver() as receiver, tracing_to(receiver, monkeypatch, live_server=live_server):
        bot = live.agent(points=AGENT_POINTS)
        outcome = conversation_run(
            bot, HERE / "change_address_with_phone.yaml", out=None, tracer=agent_traces.get_tracer("agent")
        )
        assert outcome.mismatches == []
    agent_spans = exporter.get_finished_spans()
    turns = [s for s in agent_spans if s.name == "agent.turn"]
    assert len(turns) == len(outcome.turns)
    assert any(s.name.startswith("chat ") and s.attributes["gen_ai.operation.name"] == "chat" for s in agent_spans)
    by_id = {f"{s.context.span_id:016x}": s for s in agent_spans}
    served = [s for s in receiver.all() if s.kind == KIND_SERVER]
    session_requests = [s for s in served if s.attributes["url.path"].startswith("/api/v1/sessions/")]
    assert session_requests, served
    for span in session_requests:
        if span.attributes["http.request.method"] == "POST" and span.attributes["url.path"] == "/api/v1/sessions":
            continue  # the session is created before the first turn, outside any
        parent = by_id.get(span.parent_span_id)
        assert parent is not None, (span.name, span.parent_span_id)
        assert f"{parent.context.trace_id:032x}" == span.trace_id
    # The turn says what was decided (and never what the customer wrote).
    assert {t.attributes["arbiter.decision"] for t in turns if "arbiter.decision" in t.attributes}
    messages = {t.message for t in outcome.turns}
    assert not messages & {str(v) for s in agent_spans for v in s.attributes.values()}

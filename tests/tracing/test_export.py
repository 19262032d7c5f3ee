"""Arbiter's spans over a real OTLP/HTTP receiver: the request's server span joined to the runtime's
``traceparent`` and returned, the services' spans and their attributes, errors always exported, the rest
by the head sampler's ratio."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.sessions.services import session_create
from rules.config.yaml_import import config_import
from tests.support import ADDRESS_FIELDS, agent_token, load_demo
from tests.support.otlp import KIND_SERVER, STATUS_ERROR, ReceivedSpan, otlp_receiver, traceparent
from tests.support.tool_calls import PHONE, TOOLS_DOCUMENT, check, report
from tests.support.tracing import tracing_to

pytestmark = pytest.mark.django_db

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SECRET_TEXT = "my card number is 4111 1111 1111 1111"
# Trace ids whose lower 64 bits fall below (sampled) or above (not) any ratio between them, as the
# specification's TraceIdRatioBased compares them.
LOW = "0123456789abcdef0000000000000001"
HIGH = "0123456789abcdefffffffffffffff00"


@pytest.fixture
def receiver():
    with otlp_receiver() as r:
        yield r


@pytest.fixture
def bot(db) -> str:
    load_demo(reason="tracing test demo")
    return agent_token("trace_bot", reason="tracing test")


def client_for(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def decide(client: APIClient, **headers: str):
    body = {
        "point": "intent_routing",
        "input": SECRET_TEXT,
        "session_id": "s1",
        "apply": True,
        "candidate": {"decision": "general_query", "confidence": 0.9, "reason": SECRET_TEXT},
    }
    return client.post("/api/v1/decisions", body, format="json", **headers)


def by_name(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {s.name: s for s in spans}


def new_session(key: str = "s1") -> None:
    session_create(agent=AgentRuntime.objects.get(name="trace_bot"), machine_key="after_sales", session_id=key)


def test_a_decide_joins_the_runtimes_trace_and_returns_its_own_span(receiver, bot, monkeypatch):
    new_session()
    with tracing_to(receiver, monkeypatch, OTEL_SERVICE_NAME="arbiter-test"):
        answer = decide(client_for(bot), HTTP_TRACEPARENT=traceparent(TRACE))
    assert answer.status_code == 201, answer.json()
    spans = by_name(receiver.spans(trace_id=TRACE, at_least=3))
    server = spans["POST /api/v1/decisions"]
    decide_span = spans["arbiter.decide"]
    move = spans["arbiter.session.move"]
    # The runtime's span is the parent of Arbiter's server span; the services' spans are its children.
    assert (server.parent_span_id, server.kind) == ("00f067aa0ba902b7", KIND_SERVER)
    assert decide_span.parent_span_id == server.span_id
    assert move.parent_span_id == decide_span.span_id
    # The answer names Arbiter's span, so the runtime can link to it.
    assert answer["traceparent"] == f"00-{TRACE}-{server.span_id}-01" == answer["traceresponse"]
    assert server.resource["service.name"] == "arbiter-test"
    assert server.attributes["http.route"] == "/api/v1/decisions"
    assert server.attributes["http.response.status_code"] == 201
    assert server.attributes["arbiter.request_id"] == answer["X-Request-ID"]
    body = answer.json()
    assert decide_span.attributes["arbiter.point"] == "intent_routing"
    assert decide_span.attributes["arbiter.session.id"] == "s1"
    assert decide_span.attributes["arbiter.decision"] == body["decision"]
    assert decide_span.attributes["arbiter.ruled_by"] == body["ruled_by"]
    assert decide_span.attributes["arbiter.decision.id"] == body["id"]
    assert move.attributes["arbiter.machine"] == "after_sales"
    assert (move.attributes["arbiter.state.from"], move.attributes["arbiter.state"]) == (
        "init",
        body["session"]["state"],
    )
    assert move.attributes["arbiter.move.kind"] == "decision"
    # What the customer wrote (and the model's reason) is in no span.
    for span in spans.values():
        assert not any("4111" in str(value) for value in span.attributes.values()), span


def test_an_invalid_traceparent_is_ignored(receiver, bot, monkeypatch):
    new_session()
    with tracing_to(receiver, monkeypatch):
        answer = decide(client_for(bot), HTTP_TRACEPARENT="00-zz-not-a-trace-id-01")
    assert answer.status_code == 201, answer.json()
    version, trace_id, span_id, flags = answer["traceparent"].split("-")
    assert (version, len(trace_id), len(span_id), int(flags, 16) & 1) == ("00", 32, 16, 1)
    server = by_name(receiver.spans(trace_id=trace_id, at_least=3))["POST /api/v1/decisions"]
    assert (server.span_id, server.parent_span_id) == (span_id, "")


def test_an_error_is_exported_whatever_the_ratio_and_the_rest_is_not(receiver, bot, monkeypatch):
    new_session()
    with tracing_to(receiver, monkeypatch, OTEL_TRACES_SAMPLER="traceidratio", OTEL_TRACES_SAMPLER_ARG="0"):
        client = client_for(bot)
        fine = decide(client, HTTP_TRACEPARENT=traceparent(LOW))
        assert fine.status_code == 201
        assert fine["traceparent"].endswith("-00")  # the head decision, as the runtime reads it
        refused = client.post(
            "/api/v1/sessions/s1/transitions",
            {"to": "closed", "expected_state": "init"},  # it is not in init any more
            format="json",
            HTTP_TRACEPARENT=traceparent(HIGH),
        )
        assert refused.status_code == 409
    spans = by_name(receiver.spans(trace_id=HIGH, at_least=1))
    server = spans["POST /api/v1/sessions/{session_id}/transitions"]
    assert server.status == STATUS_ERROR
    assert server.attributes["error.type"] == "state_mismatch"
    assert server.attributes["http.response.status_code"] == 409
    assert receiver.spans(trace_id=LOW, timeout=0.5) == []


@pytest.mark.parametrize(
    ("sampler", "parent_sampled", "exported"),
    [
        # traceidratio looks at the trace id only: LOW is below 0.5 of the id space, HIGH above.
        ("traceidratio", False, {LOW}),
        # parent-based: the runtime's flag decides for a trace it started.
        ("parentbased_traceidratio", True, {LOW, HIGH}),
        ("parentbased_traceidratio", False, set()),
    ],
)
def test_the_rest_is_sampled_by_ratio(receiver, bot, monkeypatch, sampler, parent_sampled, exported):
    new_session("s1")
    new_session("s2")
    with tracing_to(receiver, monkeypatch, OTEL_TRACES_SAMPLER=sampler, OTEL_TRACES_SAMPLER_ARG="0.5"):
        client = client_for(bot)
        for trace_id in (LOW, HIGH):
            answer = client.get("/api/v1/sessions/s1", HTTP_TRACEPARENT=traceparent(trace_id, sampled=parent_sampled))
            assert answer.status_code == 200
            assert answer["traceparent"].endswith("-01" if trace_id in exported else "-00")
        # A mark after the two: once it is in, everything before it was exported too.
        client.get("/api/v1/sessions/nope", HTTP_TRACEPARENT=traceparent(TRACE, sampled=False))
    receiver.spans(trace_id=TRACE)
    assert {s.trace_id for s in receiver.all()} - {TRACE} == exported


def test_tool_call_checks_and_results_are_spans_and_a_tools_error_is_kept(receiver, db, monkeypatch):
    config_import(text=TOOLS_DOCUMENT, source="test", actor=None, reason="tool-call tests")
    token = agent_token("tool_bot", points=[])
    agent = AgentRuntime.objects.get(name="tool_bot")
    session_create(agent=agent, machine_key="tooling", session_id="t1")
    with tracing_to(receiver, monkeypatch, OTEL_TRACES_SAMPLER="always_off"):
        client = client_for(token)
        started = check(client, "t1", "verify_phone", {"phone": PHONE}, operation_id="op-1")
        assert started.status_code == 201, started.json()
        check_trace = started["traceparent"].split("-")[1]
        failed = report(client, "op-1", error={"code": "NOT_FOUND", "message": PHONE})
        assert failed.status_code == 200, failed.json()
        result_trace = failed["traceparent"].split("-")[1]
    spans = by_name(receiver.spans(trace_id=result_trace, at_least=2))
    result = spans["arbiter.tool_call.result"]
    assert result.attributes["arbiter.tool.name"] == "verify_phone"
    assert result.attributes["arbiter.tool.operation_id"] == "op-1"
    assert result.attributes["arbiter.session.id"] == "t1"
    assert (result.status, result.attributes["error.type"]) == (STATUS_ERROR, "NOT_FOUND")
    assert not any(PHONE in str(v) for s in spans.values() for v in s.attributes.values())
    # The check went well: under always_off it is not exported.
    assert receiver.spans(trace_id=check_trace, timeout=0.3) == []


def test_a_tool_call_check_span(receiver, db, monkeypatch):
    config_import(text=TOOLS_DOCUMENT, source="test", actor=None, reason="tool-call tests")
    token = agent_token("tool_bot", points=[])
    session_create(agent=AgentRuntime.objects.get(name="tool_bot"), machine_key="tooling", session_id="t1")
    with tracing_to(receiver, monkeypatch):
        started = check(client_for(token), "t1", "verify_phone", {"phone": PHONE}, operation_id="op-2")
    assert started.status_code == 201
    spans = by_name(receiver.spans(trace_id=started["traceparent"].split("-")[1], at_least=2))
    span = spans["arbiter.tool_call.check"]
    assert span.attributes["arbiter.tool.name"] == "verify_phone"
    assert span.attributes["arbiter.tool.operation_id"] == "op-2"
    assert span.attributes["arbiter.tool.attempt"] == 1
    assert span.parent_span_id == spans["POST /api/v1/sessions/{session_id}/tool-calls"].span_id


def test_an_event_is_a_span_with_its_move(receiver, bot, monkeypatch):
    session_create(agent=AgentRuntime.objects.get(name="trace_bot"), machine_key="change_address", session_id="c1")
    with tracing_to(receiver, monkeypatch):
        client = client_for(bot)
        for to, expected in (("awaiting_intent", "created"), ("collecting_params", "awaiting_intent")):
            moved = client.post(
                "/api/v1/sessions/c1/transitions", {"to": to, "expected_state": expected}, format="json"
            )
            assert moved.status_code == 200, moved.json()
        sent = client.post(
            "/api/v1/sessions/c1/events",
            {"event": "params_collected", "expected_state": "collecting_params", "updates": ADDRESS_FIELDS},
            format="json",
        )
        assert sent.status_code == 200, sent.json()
    spans = by_name(receiver.spans(trace_id=sent["traceparent"].split("-")[1], at_least=3))
    event = spans["arbiter.session.event"]
    assert event.attributes["arbiter.event"] == "params_collected"
    assert (event.attributes["arbiter.state.from"], event.attributes["arbiter.state"]) == (
        "collecting_params",
        "executing",
    )
    move = spans["arbiter.session.move"]
    assert move.parent_span_id == event.span_id
    assert (move.attributes["arbiter.machine"], move.attributes["arbiter.state"]) == ("change_address", "executing")
    # Field values are the customer's data: none is an attribute.
    values = {str(v) for v in ADDRESS_FIELDS.values()}
    assert not values & {str(v) for s in spans.values() for v in s.attributes.values()}


def test_a_timeout_in_a_worker_is_a_trace_of_its_own_and_kept(receiver, bot, monkeypatch):
    """No request: the sweep's move is its own root span, and a timeout is an error, exported whatever the
    ratio."""
    import datetime as dt

    from django.utils import timezone

    from agents.sessions.timeouts import session_timeouts_sweep

    agent = AgentRuntime.objects.get(name="trace_bot")
    session_create(agent=agent, machine_key="change_address", session_id="c9")
    client_for(bot).post(
        "/api/v1/sessions/c9/transitions", {"to": "awaiting_intent", "expected_state": "created"}, format="json"
    )
    with tracing_to(receiver, monkeypatch, OTEL_TRACES_SAMPLER="always_off"):
        assert session_timeouts_sweep(now=timezone.now() + dt.timedelta(days=1)) == 1
    (move,) = receiver.spans(at_least=1)
    assert (move.name, move.parent_span_id, move.status) == ("arbiter.session.move", "", STATUS_ERROR)
    assert (move.attributes["arbiter.move.kind"], move.attributes["error.type"]) == ("timeout", "timeout")
    assert move.attributes["arbiter.session.id"] == "c9"

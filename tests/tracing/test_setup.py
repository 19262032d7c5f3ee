"""Which variables turn tracing on, what "off" leaves in the request path, and the export-side sampling's
bookkeeping."""

from __future__ import annotations

import os

import pytest
from django.core.exceptions import MiddlewareNotUsed
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Status, StatusCode, set_span_in_context
from rest_framework.test import APIClient

from decision_service import tracing, tracing_export
from decision_service.tracing_export import ErrorsAndSampled, RecordEverything
from tests.support import agent_token, load_demo
from tests.support.otlp import otlp_receiver, traceparent

ENDPOINT = "http://127.0.0.1:4318"


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, ()),
        ({"OTEL_SERVICE_NAME": "arbiter"}, ()),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, ("otlp",)),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT + "/v1/traces"}, ("otlp",)),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, ("otlp",)),  # the SDK's default endpoint, localhost:4318
        ({"OTEL_TRACES_EXPORTER": "console"}, ("console",)),
        ({"OTEL_TRACES_EXPORTER": "otlp, console"}, ("otlp", "console")),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, ()),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, ()),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, ()),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, ("otlp",)),
    ],
)
def test_the_standard_variables_turn_tracing_on(environ, wanted):
    assert tracing.tracing_wanted(environ) == wanted


def test_only_otlp_over_http_is_exported():
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert tracing.provider_from(environ) is None
    assert tracing.provider_from({**environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}) is not None


def test_samplers_by_name():
    assert tracing_export.head_sampler(None, None).get_description().startswith("ParentBased{root:AlwaysOnSampler,")
    assert tracing_export.head_sampler("traceidratio", "0.25").get_description() == "TraceIdRatioBased{0.25}"
    # An argument that is no ratio, and a name Arbiter does not know: the specification's defaults.
    assert tracing_export.head_sampler("traceidratio", "lots").get_description() == "TraceIdRatioBased{1.0}"
    assert tracing_export.head_sampler("jaeger_remote", None).get_description().startswith("ParentBased{root:AlwaysOn")


def test_off_by_default_nothing_is_traced_nor_returned(db, monkeypatch):
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    assert tracing.setup_from_env() is False
    assert not tracing.active()
    with pytest.raises(MiddlewareNotUsed):
        tracing.TracingMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    with tracing.span("arbiter.decide") as span:
        assert span is None
    load_demo()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token('quiet_bot')}")
    with otlp_receiver() as receiver:
        answer = client.post(
            "/api/v1/decisions",
            {"point": "intent_routing", "input": "hello"},
            format="json",
            HTTP_TRACEPARENT=traceparent("4bf92f3577b34da6a3ce929d0e0e4736"),
        )
        assert answer.status_code in (200, 201), answer.json()
        assert "traceparent" not in answer and "traceresponse" not in answer
        assert receiver.spans(timeout=0.3) == [] and receiver.requests == 0


def _provider() -> tuple[TracerProvider, InMemorySpanExporter, ErrorsAndSampled]:
    exporter = InMemorySpanExporter()
    processor = ErrorsAndSampled(SimpleSpanProcessor(exporter))
    provider = TracerProvider(sampler=RecordEverything(ALWAYS_OFF))
    provider.add_span_processor(processor)
    return provider, exporter, processor


def test_an_unsampled_trace_waits_for_its_root_then_goes_only_with_an_error():
    provider, exporter, processor = _provider()
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("fine root"):
        with tracer.start_as_current_span("fine child"):
            pass
        assert list(processor.held().values()) == [1]
    assert processor.held() == {} and exporter.get_finished_spans() == ()
    with tracer.start_as_current_span("failed root"):
        with tracer.start_as_current_span("failed child") as child:
            child.set_status(Status(StatusCode.ERROR, "state_mismatch"))
        with tracer.start_as_current_span("after it"):
            pass
    exported = exporter.get_finished_spans()
    assert [s.name for s in exported] == ["failed child", "after it", "failed root"]
    assert all(s.context.trace_flags.sampled for s in exported)  # flagged so the exporter takes them
    assert processor.held() == {}


def test_spans_waiting_for_a_root_that_never_ends_are_bounded(monkeypatch):
    monkeypatch.setattr(tracing_export, "MAX_HELD_SPANS", 5)
    provider, _, processor = _provider()
    tracer = provider.get_tracer("test")
    roots = [tracer.start_span(f"root {i}") for i in range(4)]  # never ended
    for root in roots:
        ctx = set_span_in_context(root)
        for _ in range(2):
            tracer.start_span("child", context=ctx).end()
    assert sum(processor.held().values()) <= 5
    assert len(processor.held()) == 2  # the oldest traces were forgotten first

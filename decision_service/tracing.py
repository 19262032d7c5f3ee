"""OpenTelemetry traces of Arbiter's work: off unless an exporter is configured, and then free of cost to
nobody but the traced.

**On or off** (``tracing_wanted``, read from the standard variables once per process): off when
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``; on when ``OTEL_TRACES_EXPORTER`` names
``otlp`` (OTLP over HTTP, protobuf) or ``console``, or — with it unset — when
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. Everything else (the
endpoint, headers, timeout, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``) is read by
the SDK itself. ``setup_from_env`` runs in every process that serves: the WSGI module (each gunicorn
worker imports it after the fork) and each Celery worker process (``decision_service.celery``).

**Off costs nothing measurable**: no tracer provider is made, ``TracingMiddleware`` removes itself from
the middleware chain (``MiddlewareNotUsed``), and ``span`` — the one hook on the decide path — returns a
shared do-nothing context manager after one test of a module global (bench/RESULTS.md, "Tracing").

**Spans**: the server span of each request (HTTP semantic conventions: ``http.request.method``,
``http.route``, ``url.path``, ``http.response.status_code``) is the child of the runtime's W3C
``traceparent`` when it sends a valid one (an invalid one is ignored: the request starts a trace of its
own), and its context comes back in the answer's ``traceparent`` and ``traceresponse`` headers. Services
open child spans (``arbiter.decide``, ``arbiter.session.move``, ``arbiter.session.event``,
``arbiter.tool_call.check``, ``arbiter.tool_call.result``) with ``arbiter.*`` attributes: configuration
keys, ids and codes only — never the user's text, facts, candidates' reasons or tool inputs and outputs,
which the decision log masks and a trace backend would not.

**Sampling**: ``decision_service.tracing_export``.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse

from decision_service import env

if TYPE_CHECKING:  # the SDK is imported only when tracing is on
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

logger = logging.getLogger("arbiter.tracing")

SCOPE = "arbiter"
EXPORTERS = ("otlp", "console")

# The tracer when tracing is on in this process, else None: the one global the request path tests.
_tracer: Tracer | None = None
_provider: TracerProvider | None = None
_lock = threading.Lock()


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def tracing_wanted(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The exporters the standard variables ask for; ``()`` when tracing stays off."""
    if _true(environ.get("OTEL_SDK_DISABLED")):
        return ()
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not named:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        return ("otlp",) if endpoint else ()
    wanted = tuple(dict.fromkeys(n.strip() for n in named.split(",") if n.strip()))
    if "none" in wanted:
        return ()
    unknown = [n for n in wanted if n not in EXPORTERS]
    if unknown:
        logger.warning("OTEL_TRACES_EXPORTER names %s, which Arbiter cannot export to (only otlp, console)", unknown)
    return tuple(n for n in wanted if n in EXPORTERS)


def _protocol_ok(environ: Mapping[str, str]) -> bool:
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol.strip() != "http/protobuf":
        logger.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%r: Arbiter exports OTLP over http/protobuf only", protocol)
        return False
    return True


def provider_from(environ: Mapping[str, str]) -> TracerProvider | None:
    """A tracer provider as the variables in ``environ`` configure it, or None when tracing stays off."""
    exporters = tracing_wanted(environ)
    if "otlp" in exporters and not _protocol_ok(environ):
        exporters = tuple(e for e in exporters if e != "otlp")
    if not exporters:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    from decision_service.tracing_export import ErrorsAndSampled, RecordEverything, head_sampler

    head = head_sampler(environ.get("OTEL_TRACES_SAMPLER"), environ.get("OTEL_TRACES_SAMPLER_ARG"))
    # Resource.create reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME itself, and what is passed here
    # would win over them: Arbiter's default name (rather than the SDK's "unknown_service") only when
    # neither names the service.
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes = {} if named else {"service.name": SCOPE}
    provider = TracerProvider(resource=Resource.create(attributes), sampler=RecordEverything(head))
    for name in exporters:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter: Any = OTLPSpanExporter()  # endpoint, headers, timeout, compression: OTEL_EXPORTER_OTLP_*
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(ErrorsAndSampled(BatchSpanProcessor(exporter)))
    return provider


def install(provider: TracerProvider | None) -> None:
    """Trace this process with ``provider`` (None: stop tracing; the previous provider is flushed and shut)."""
    global _tracer, _provider
    with _lock:
        previous, _provider = _provider, provider
        _tracer = provider.get_tracer(SCOPE) if provider is not None else None
    if previous is not None and previous is not provider:
        previous.shutdown()


def setup_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on in this process if the environment asks for it (once; later calls change nothing).
    Also makes the provider OpenTelemetry's global one, so instrumentations added later join the trace."""
    if _provider is not None:
        return True
    provider = provider_from(env.otel_environ() if environ is None else environ)
    if provider is None:
        return False
    from opentelemetry import trace

    install(provider)
    trace.set_tracer_provider(provider)
    logger.info("OpenTelemetry tracing on")
    return True


def active() -> bool:
    return _tracer is not None


def flush(timeout_millis: int = 10_000) -> None:
    """Export what has ended now (tests; a worker about to exit has the provider's own exit hook)."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


class _Off:
    """What ``span`` returns with tracing off: enters to None, costs two method calls."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_OFF = _Off()


def error_code(exc: BaseException) -> str:
    """A refusal's stable ``code`` (domain errors, DRF's), else the exception's class name: what a span
    says of an error. Never the message, which may quote what the client sent."""
    code = getattr(exc, "code", None) or getattr(exc, "default_code", None)
    return code if isinstance(code, str) else type(exc).__name__


def mark_error(span: Span, code: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, code))


class _On:
    """A child span of the current one for the ``with`` block; an exception out of it marks it an error
    (with the refusal's code) and goes on."""

    __slots__ = ("name", "span", "token")

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> Span:
        from opentelemetry import context, trace

        tracer = _tracer
        assert tracer is not None
        self.span = tracer.start_span(self.name, record_exception=False, set_status_on_exception=False)
        self.token = context.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        from opentelemetry import context

        if exc is not None:
            mark_error(self.span, error_code(exc))
        self.span.end()
        context.detach(self.token)


def span(name: str) -> _On | _Off:
    """``with tracing.span("arbiter.decide") as s:`` — ``s`` is the span, or None when tracing is off (then
    set no attributes: computing them is the caller's cost)."""
    if _tracer is None:
        return _OFF
    return _On(name)


def set_attributes(span: Span, attributes: Mapping[str, Any]) -> None:
    """Set the attributes whose value is not None (OpenTelemetry takes no None)."""
    span.set_attributes({k: v for k, v in attributes.items() if v is not None})


HEADERS_OUT = ("traceparent", "traceresponse")


class _RequestHeaders:
    """The W3C propagator's getter over Django's ``request.META`` (duck-typed: the API's ``Getter`` is
    imported only with tracing on)."""

    @staticmethod
    def get(carrier: Mapping[str, Any], key: str) -> list[str] | None:
        value = carrier.get("HTTP_" + key.upper().replace("-", "_"))
        return [value] if isinstance(value, str) else None

    @staticmethod
    def keys(carrier: Mapping[str, Any]) -> list[str]:
        return [k[5:].lower().replace("_", "-") for k in carrier if k.startswith("HTTP_")]


_GETTER: Any = _RequestHeaders()


@functools.lru_cache(maxsize=256)
def _template(route: str) -> str:
    """Django's ``api/v1/sessions/<str:session_id>`` as docs/openapi.yaml spells the path:
    ``/api/v1/sessions/{session_id}``."""
    return "/" + _PARAMETER.sub(r"{\1}", route)


_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^:<>]+)>")


def _route(request: HttpRequest) -> str | None:
    match = getattr(request, "resolver_match", None)
    return _template(match.route) if match is not None and match.route else None


def _problem_code(response: HttpResponse) -> str:
    data = getattr(response, "data", None)  # DRF's answers keep what they serialised
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) else str(response.status_code)


class TracingMiddleware:
    """The server span of every request (first in ``MIDDLEWARE``); absent from the chain when tracing is off."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if _tracer is None:
            raise MiddlewareNotUsed
        self.get_response = get_response
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.propagator = TraceContextTextMapPropagator()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind

        tracer = _tracer
        if tracer is None:  # turned off since this chain was built (tests)
            return self.get_response(request)
        method = request.method or "_OTHER"
        parent = self.propagator.extract(request.META, getter=_GETTER)
        span = tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": request.path,
                "url.scheme": request.scheme or "http",
            },
            record_exception=False,
            set_status_on_exception=False,
        )
        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            response = self.get_response(request)
        except BaseException as exc:
            mark_error(span, error_code(exc))
            span.end()
            raise
        finally:
            context.detach(token)
        route = _route(request)
        if route is not None:
            span.update_name(f"{method} {route}")
            span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", response.status_code)
        if request_id := response.get("X-Request-ID"):  # the request log's id: from a trace to the log line
            span.set_attribute("arbiter.request_id", request_id)
        # Arbiter counts every problem as an error (the trace is kept whatever the sampling ratio), where
        # the HTTP conventions leave a server span's 4xx unset: a refused turn is what its operators look for.
        if response.status_code >= 400:
            mark_error(span, _problem_code(response))
        carrier: dict[str, str] = {}
        self.propagator.inject(carrier, context=trace.set_span_in_context(span))
        if "traceparent" in carrier:
            for header in HEADERS_OUT:
                response[header] = carrier["traceparent"]
        span.end()
        return response

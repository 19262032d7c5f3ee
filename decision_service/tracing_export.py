"""What of Arbiter's traces leaves the process: "errors sampled always, the rest by ratio" (seed 000 §2.3).

A head sampler decides when a trace starts, before anyone knows whether the request will fail. So the
decision is taken in two places:

- ``RecordEverything`` wraps the head sampler that ``OTEL_TRACES_SAMPLER`` names (the SDK's own samplers,
  parent-based ones honouring the runtime's ``traceparent`` flag): where it would drop a span, the span is
  recorded all the same, without the sampled flag. The flag Arbiter returns in ``traceparent`` is thus
  the head decision, as the runtime expects it.
- ``ErrorsAndSampled`` (the span processor) hands sampled spans to the exporter's batch processor at once;
  it holds the spans of an unsampled trace in memory until the trace's local root (the request's server
  span, or a span with no parent in a worker) ends, then exports them all if any of them ended with an
  error status, and forgets them otherwise.

An "error" is a span whose status is ``ERROR``: a request answered with a problem (any 4xx or 5xx), an
exception out of a traced service (a refusal: the domain error's ``code``), and a decide that hands the
session to a person (``decision_service.tracing``). Memory is bounded: at most ``MAX_HELD_SPANS`` spans
wait for their root; past that the oldest unsampled trace is forgotten (a root that never ends — a
leak — cannot grow the process).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, SpanContext, SpanKind, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

logger = logging.getLogger("arbiter.tracing")

MAX_HELD_SPANS = 10_000
DEFAULT_SAMPLER = "parentbased_always_on"  # the specification's default


def _ratio(arg: str | None) -> float:
    """``OTEL_TRACES_SAMPLER_ARG`` as the specification reads it: a ratio in [0, 1], 1.0 when unset or invalid."""
    if arg is None or arg.strip() == "":
        return 1.0
    try:
        ratio = float(arg)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        logger.warning("OTEL_TRACES_SAMPLER_ARG=%r is no ratio between 0 and 1: using 1.0", arg)
        return 1.0
    return ratio


def head_sampler(name: str | None, arg: str | None) -> Sampler:
    """The head sampler ``OTEL_TRACES_SAMPLER`` (and its ``_ARG``) name; the default for an unknown name."""
    chosen = (name or DEFAULT_SAMPLER).strip().lower()
    samplers: dict[str, Sampler] = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "parentbased_always_on": ParentBased(ALWAYS_ON),
        "parentbased_always_off": ParentBased(ALWAYS_OFF),
    }
    if chosen == "traceidratio":
        return TraceIdRatioBased(_ratio(arg))
    if chosen == "parentbased_traceidratio":
        return ParentBased(TraceIdRatioBased(_ratio(arg)))
    if chosen not in samplers:
        logger.warning("OTEL_TRACES_SAMPLER=%r is not a sampler Arbiter knows: using %s", name, DEFAULT_SAMPLER)
        chosen = DEFAULT_SAMPLER
    return samplers[chosen]


class RecordEverything(Sampler):
    """The head sampler's decision, except that a dropped span is recorded (unsampled) so that an error
    later in its trace can still have it exported."""

    def __init__(self, head: Sampler) -> None:
        self.head = head

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        result = self.head.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)
        if result.decision is Decision.DROP:
            return SamplingResult(Decision.RECORD_ONLY, result.attributes, result.trace_state)
        return result

    def get_description(self) -> str:
        return f"RecordEverything{{{self.head.get_description()}}}"


def _local_root(span: ReadableSpan) -> bool:
    return span.parent is None or span.parent.is_remote


def _context(span: ReadableSpan) -> SpanContext:
    context = span.get_span_context()
    assert context is not None  # an SDK span always has one
    return context


def _as_sampled(span: ReadableSpan) -> ReadableSpan:
    """An unsampled span kept for its trace's error, flagged sampled so that the exporter takes it."""
    context = _context(span)
    flagged = SpanContext(
        context.trace_id,
        context.span_id,
        context.is_remote,
        TraceFlags(context.trace_flags | TraceFlags.SAMPLED),
        context.trace_state,
    )
    return ReadableSpan(
        name=span.name,
        context=flagged,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class ErrorsAndSampled(SpanProcessor):
    """Sampled spans go to ``exporting`` (a batch processor) as they end; an unsampled trace's spans wait
    for its local root and go too only if one of them is an error."""

    def __init__(self, exporting: SpanProcessor) -> None:
        self.exporting = exporting
        self._lock = threading.Lock()
        # trace id → (its spans so far, whether one is an error); oldest first
        self._held: OrderedDict[int, tuple[list[ReadableSpan], bool]] = OrderedDict()
        self._count = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.exporting.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        context = _context(span)
        if context.trace_flags.sampled:
            self.exporting.on_end(span)
            return
        error = span.status.status_code is StatusCode.ERROR
        with self._lock:
            spans, errored = self._held.pop(context.trace_id, ([], False))
            spans.append(span)
            errored = errored or error
            if not _local_root(span):
                self._held[context.trace_id] = (spans, errored)
                self._count += 1
                self._bound()
                return
            self._count -= len(spans) - 1
        if errored:
            for held in spans:
                self.exporting.on_end(_as_sampled(held))

    def _bound(self) -> None:
        while self._count > MAX_HELD_SPANS and self._held:
            _, (spans, _) = self._held.popitem(last=False)
            self._count -= len(spans)

    def held(self) -> Mapping[int, int]:
        """Trace id → spans waiting for their root (for tests)."""
        with self._lock:
            return {trace_id: len(spans) for trace_id, (spans, _) in self._held.items()}

    def shutdown(self) -> None:
        self.exporting.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporting.force_flush(timeout_millis)

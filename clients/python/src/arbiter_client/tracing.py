"""W3C Trace Context for Arbiter's calls: each request carries a ``traceparent`` (and ``tracestate``), so
that Arbiter's spans join the agent's trace.

Where it comes from, first found wins:

1. the value given with ``trace_context(traceparent=…)`` for the calls made inside that block (a runtime
   that keeps its trace ids itself, or receives them from upstream);
2. the current OpenTelemetry span, when ``opentelemetry-api`` is installed (the ``otel`` extra:
   ``pip install 'arbiter-client[otel]'``), through the propagator OpenTelemetry is configured with;
3. nothing: the request starts a trace of its own at Arbiter.

Arbiter answers with its own span's context in ``traceparent`` / ``traceresponse``; ``last_traceparent``
of a client holds the latest one.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HEADERS = ("traceparent", "tracestate")
_VALID = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")

_given: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("arbiter_trace_context", default=None)

try:  # the extra: without it, only a value given by the caller is sent
    from opentelemetry import propagate as _propagate
except ImportError:  # pragma: no cover - depends on the environment
    _propagate = None  # type: ignore[assignment]


@contextmanager
def trace_context(traceparent: str, tracestate: str = "") -> Iterator[None]:
    """Send ``traceparent`` (a W3C ``00-<trace id>-<parent id>-<flags>``) with every call inside the block,
    in this thread or task, instead of the current OpenTelemetry span's."""
    if not _VALID.fullmatch(traceparent):
        raise ValueError(f"not a W3C traceparent: {traceparent!r}")
    headers = {"traceparent": traceparent}
    if tracestate:
        headers["tracestate"] = tracestate
    token = _given.set(headers)
    try:
        yield
    finally:
        _given.reset(token)


def outgoing() -> dict[str, str]:
    """The trace headers to send now: the given ones, else the current OpenTelemetry context's, else none."""
    given = _given.get()
    if given is not None:
        return dict(given)
    if _propagate is None:
        return {}
    carrier: dict[str, Any] = {}
    _propagate.inject(carrier)
    return {k: v for k, v in carrier.items() if k in HEADERS}

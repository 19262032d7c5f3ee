"""Prometheus metrics: what the services count as it happens, and ``GET /metrics`` that shows it.

The services call the small functions below where the domain event happens (a decision made, a
candidate asked for, an anomaly, a session's move, a rate-limited request); the request middleware
(``decision_service.request_log``) times every request. Values that live in the database — the current
configuration revision, open change requests — are not kept on the request path: apps compute them when
Prometheus scrapes, by answering ``metrics_collecting``. docs/observability.md lists every metric.

Several gunicorn workers: ``bin/serve`` gives them ``PROMETHEUS_MULTIPROC_DIR`` (emptied before the workers
start), prometheus-client then keeps each process's values in memory-mapped files there, and a scrape —
answered by whichever worker gets it — adds up the files of all of them (``MultiProcessCollector``). A
worker that exits is marked dead by gunicorn's ``child_exit`` hook (``decision_service.serving``): its
counts stay in the totals, its live gauges go. Without the variable (runserver, tests in one process)
the ordinary in-process registry is used. The mode is chosen when prometheus-client is first imported,
so the variable must be set before the process starts.

Label values are configuration keys (points, outcomes, machines), agent names and fixed codes: bounded
by what staff configure, never by what a client sends — except the codes of anomalies that agents report
themselves, which are capped (``_bounded``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from functools import lru_cache

from django.conf import settings
from django.dispatch import Signal
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from decision_service.api.errors import plain_problem

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Prometheus is scraping (no kwargs). Receivers answer an iterable of prometheus_client metric families
# (e.g. GaugeMetricFamily) computed now: values the database holds, not the request path.
metrics_collecting = Signal()

DECISIONS = Counter(
    "arbiter_decisions",
    "Decisions answered and logged, by point, who decided (ruled_by) and the final decision.",
    ["point", "ruled_by", "decision"],
)
EVALUATION_SECONDS = Histogram(
    "arbiter_decision_evaluation_seconds",
    "Time the engine took to evaluate a request (the decision log's evaluated_us), by point.",
    ["point"],
    buckets=(0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05),
)
NEEDS_CANDIDATE = Counter(
    "arbiter_needs_candidate",
    'Requests answered "ask your LLM first" (needs_candidate): nothing logged yet, by point.',
    ["point"],
)
ANOMALIES = Counter("arbiter_anomalies", "Model anomalies recorded, by code.", ["code"])
TRANSITIONS = Counter(
    "arbiter_session_transitions",
    "Session moves written, by state machine and kind (move, decision, fallback, interrupt, resume, "
    "model_failure, timeout, return, resolve).",
    ["machine", "kind"],
)
# Seed 000 §2.3: a state whose P95 stay doubles (awaiting_phone 8 s → 15 s) is a flow problem. Observed
# for every move out of a state (a fields write stays in it), when the move commits.
STATE_DWELL_SECONDS = Histogram(
    "arbiter_session_state_dwell_seconds",
    "How long sessions stayed in a state before a move took them out of it, by state machine and state.",
    ["machine", "state"],
    buckets=(0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0),
)
ILLEGAL_MOVES = Counter(
    "arbiter_session_illegal_moves",
    "Moves, events and actions a session's machine forbids in the state it was in (refused, or a decision's "
    "mapped move it could not follow), by state machine, state and anomaly code.",
    ["machine", "state", "code"],
)
SESSION_READS = Counter(
    "arbiter_decide_session_reads",
    "Decides with a session they do not move, by how the session was read: guessed (the state last seen "
    "here was right: one statement), guessed_wrong (it had moved: two), read (no usable guess: two).",
    ["read"],
)
# Tools are configuration (each has a contract), so ``tool`` is bounded; so is ``code``: a declared code
# (configuration too), ``output_invalid``, or ``undeclared`` for any code the contract does not declare.
TOOL_CALLS = Counter(
    "arbiter_tool_calls", "Tool-call attempts started (first attempts and retries), by tool.", ["tool"]
)
TOOL_FAILURES = Counter(
    "arbiter_tool_failures",
    "Tool-call attempts that failed, by tool and error code (undeclared: a code the contract does not declare).",
    ["tool", "code"],
)
TOOL_RETRIES = Counter("arbiter_tool_retries", "Retries the error policy scheduled, by tool.", ["tool"])
# The MCP gateway (agents/mcp): ``tool`` is a contract's name (configuration) or "unknown"; ``outcome`` is
# "ok" or a refusal's or give-up's code (bounded like TOOL_FAILURES' codes).
MCP_CALLS = Counter(
    "arbiter_mcp_tool_calls", "tools/call requests the MCP gateway answered, by tool and outcome.", ["tool", "outcome"]
)
MCP_UPSTREAM_SECONDS = Histogram(
    "arbiter_mcp_upstream_duration_seconds",
    "Time an upstream MCP server took to answer one forwarded attempt, by upstream server.",
    ["server"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
RATE_LIMITED = Counter("arbiter_rate_limited_requests", "Requests refused with 429 rate_limited, by agent.", ["agent"])
REQUEST_SECONDS = Histogram(
    "arbiter_http_request_duration_seconds",
    "Time from the first middleware to the response, by route name, method and status.",
    ["route", "method", "status"],
    buckets=(0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
# Sync workers serve one request at a time: summed over live workers, the busy ones.
IN_PROGRESS = Gauge(
    "arbiter_http_requests_in_progress",
    "Requests being served now (summed over the live worker processes).",
    multiprocess_mode="livesum",
)
# Each worker sets it when it first sees a revision (and compiles it on its next decide). The lowest
# over live workers says whether one still serves an older configuration; a worker that has not looked
# yet has no sample.
ENGINE_REVISION = Gauge(
    "arbiter_engine_revision",
    "The configuration revision this process's engine serves (lowest over the live worker processes).",
    ["backend"],
    multiprocess_mode="livemin",
)
# Each tool's breaker lives in a store every process shares, and whichever process makes a change sets
# the gauge: across processes the latest value set is the state ("mostrecent"; a worker that exits
# keeps its value, which was true when set).
TOOL_BREAKER_STATE = Gauge(
    "arbiter_tool_breaker_state",
    "Each tool's circuit breaker: 0 closed, 1 half_open, 2 open (set when it changes).",
    ["tool"],
    multiprocess_mode="mostrecent",
)
BREAKER_STATE_VALUES = {"closed": 0, "half_open": 1, "open": 2}

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_MAX_CODES = 100
_codes_seen: set[str] = set()
_codes_lock = threading.Lock()


def _bounded(code: str) -> str:
    """Agents report anomaly codes of their own: at most ``_MAX_CODES`` distinct values per process."""
    if code in _codes_seen:
        return code
    with _codes_lock:
        if len(_codes_seen) >= _MAX_CODES:
            return "other"
        _codes_seen.add(code)
    return code


def decision_made(*, point: str, ruled_by: str, decision: str, evaluated_us: int) -> None:
    DECISIONS.labels(point, ruled_by, decision).inc()
    EVALUATION_SECONDS.labels(point).observe(evaluated_us / 1_000_000)


def candidate_needed(*, point: str, evaluated_us: int) -> None:
    NEEDS_CANDIDATE.labels(point).inc()
    EVALUATION_SECONDS.labels(point).observe(evaluated_us / 1_000_000)


def anomaly_recorded(*, code: str) -> None:
    ANOMALIES.labels(_bounded(code)).inc()


def session_moved(*, machine: str, kind: str) -> None:
    TRANSITIONS.labels(machine, kind).inc()


def session_left_state(*, machine: str, state: str, seconds: float) -> None:
    STATE_DWELL_SECONDS.labels(machine, state).observe(max(seconds, 0.0))


def session_illegal_move(*, machine: str, state: str, code: str) -> None:
    ILLEGAL_MOVES.labels(machine, state, code).inc()


def decide_session_read(*, read: str) -> None:
    SESSION_READS.labels(read).inc()


def tool_attempt_started(*, tool: str) -> None:
    TOOL_CALLS.labels(tool).inc()


def tool_attempt_failed(*, tool: str, code: str, declared: bool, retry: bool) -> None:
    TOOL_FAILURES.labels(tool, code if declared or code == "output_invalid" else "undeclared").inc()
    if retry:
        TOOL_RETRIES.labels(tool).inc()


def mcp_call_answered(*, tool: str, outcome: str) -> None:
    MCP_CALLS.labels(tool, _bounded(outcome)).inc()


def mcp_upstream_observed(*, server: str, seconds: float) -> None:
    MCP_UPSTREAM_SECONDS.labels(server).observe(seconds)


def request_rate_limited(*, agent: str) -> None:
    RATE_LIMITED.labels(agent).inc()


def engine_revision_seen(*, backend: str, revision: int) -> None:
    ENGINE_REVISION.labels(backend).set(revision)


def tool_breaker_state(*, tool: str, state: str) -> None:
    TOOL_BREAKER_STATE.labels(tool).set(BREAKER_STATE_VALUES[state])


def request_observed(*, route: str, method: str, status: int, seconds: float) -> None:
    REQUEST_SECONDS.labels(route, method if method in _METHODS else "other", str(status)).observe(seconds)


# -- the scrape ----------------------------------------------------------------------------------


class _ScrapeTime(Collector):
    """What apps compute when Prometheus scrapes (``metrics_collecting``). A receiver that fails (the
    database is down) is logged and left out: the other metrics still answer."""

    def describe(self) -> list[Metric]:
        return []  # nothing is queried when the collector is registered

    def collect(self) -> Iterator[Metric]:
        for receiver, answer in metrics_collecting.send_robust(sender=None):
            if isinstance(answer, Exception):
                logger.warning("metrics: %s failed: %s", getattr(receiver, "__qualname__", receiver), answer)
                continue
            if answer:
                yield from answer


def multiprocess_dir() -> str:
    return os.environ.get(MULTIPROC_ENV, "")


def exposition() -> bytes:
    """The text Prometheus reads: every process's metrics (or this process's), then the scrape-time ones."""
    registry = CollectorRegistry()
    if multiprocess_dir():
        from prometheus_client.multiprocess import MultiProcessCollector

        MultiProcessCollector(registry)
    else:
        registry.register(_Registry(REGISTRY))
    registry.register(_ScrapeTime())
    return generate_latest(registry)


class _Registry(Collector):
    """The process's own registry, read inside the scrape's registry."""

    def __init__(self, inner: CollectorRegistry) -> None:
        self._inner = inner

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return self._inner.collect()


# -- who may read it -----------------------------------------------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


def address_allowed(address: str, cidrs: Iterable[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == n.version and ip in n for n in _networks(tuple(cidrs)))


# The headers a proxy names its client in: the standard one, the de-facto one, and the single-address
# ones nginx (``X-Real-IP``), Akamai/Cloudflare (``True-Client-IP``, ``CF-Connecting-IP``) and others set
# instead. Any of them means the connection's address is a proxy's.
RELAYED_BY = (
    "HTTP_FORWARDED",
    "HTTP_X_FORWARDED_FOR",
    "HTTP_X_REAL_IP",
    "HTTP_TRUE_CLIENT_IP",
    "HTTP_CF_CONNECTING_IP",
    "HTTP_X_CLIENT_IP",
)


def _bearer(request: HttpRequest) -> str:
    scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else ""


def refusal(request: HttpRequest) -> HttpResponse | None:
    """403 for a client outside ``ARBITER_METRICS_ALLOWED_CIDRS``, 401 without the token when one is set.

    A request relayed by a proxy (any header in ``RELAYED_BY``) is not let in by its address: the address
    is the proxy's and says nothing of the client. It needs the token.
    """
    token: str = settings.ARBITER_METRICS_TOKEN
    forwarded = any(header in request.META for header in RELAYED_BY)
    if not address_allowed(request.META.get("REMOTE_ADDR", ""), settings.ARBITER_METRICS_ALLOWED_CIDRS) or (
        forwarded and not token
    ):
        return plain_problem(403, "metrics_forbidden", "Forbidden", "This address may not read the metrics.")
    if token and not hmac.compare_digest(_bearer(request).encode(), token.encode()):
        response = plain_problem(
            401, "not_authenticated", "Not authenticated", "Send the metrics token as 'Authorization: Bearer …'."
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return None


@csrf_exempt  # no cookie is read: a POST gets the 405 below, not a CSRF page
def metrics_view(request: HttpRequest) -> HttpResponse:
    """``GET /metrics``: Prometheus's text format, for allowed addresses (and the token, when set)."""
    if request.method not in ("GET", "HEAD"):
        response = plain_problem(
            405, "method_not_allowed", "Method not allowed", f'Method "{request.method}" not allowed.'
        )
        response["Allow"] = "GET, HEAD"
        return response
    refused = refusal(request)
    if refused is not None:
        return refused
    response = HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


__all__ = [
    "anomaly_recorded",
    "candidate_needed",
    "decision_made",
    "engine_revision_seen",
    "metrics_collecting",
    "metrics_view",
    "request_observed",
    "request_rate_limited",
    "session_illegal_move",
    "session_left_state",
    "session_moved",
    "tool_breaker_state",
]

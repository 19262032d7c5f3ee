"""One request with its retries, shared by the sync and the async client.

What is retried, and why it is safe:
- ``429`` and ``503`` answers: the server refused before doing anything (rate limit, busy session,
  database or engine down), so sending again cannot do the work twice. ``Retry-After`` is honoured.
- A connection that could not be opened (``httpx.ConnectError``, ``ConnectTimeout``): nothing was sent.
- A connection lost after sending (read timeout, reset): only for reads and for writes that carry an
  ``Idempotency-Key`` — the server then answers a repeat with the outcome already recorded. The key is
  chosen once per call and kept across its retries. A tool call's check and result carry their own
  key, the ``operation_id`` (``repeatable``): a repeat gets the answer already given.
- Not the refusals a call names as ``final_codes``: a tool's ``circuit_open`` (503) and
  ``tool_concurrency`` (429) are the tool policy's to wait for or not (``call_tool``), not the transport's.
The wait is exponential with full jitter (between half and all of ``base * 2**attempt``, at most
``max_delay``), or the server's ``Retry-After`` when it sends one; a ``Retry-After`` longer than
``max_retry_after`` is not waited for (the error is raised at once with ``retry_after`` set).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from arbiter_client import tracing
from arbiter_client.errors import ArbiterError, ConnectionFailed, error_from_problem

R = TypeVar("R")
RETRY_STATUSES = frozenset({429, 503})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_LOST = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 0.25
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (0-based), or None not to retry."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.max_delay, self.base_delay * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 (jitter, not a secret)


@dataclass(frozen=True)
class Call(Generic[R]):
    """One operation: what to send, and whether a lost answer may be sent again; ``R`` is its answer."""

    method: str
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    expect: str = "json"  # "json" or "text"
    repeatable: bool = False  # the body names the operation: a repeat is answered, not done again
    final_codes: frozenset[str] = frozenset()  # 429/503 codes raised at once, not retried here
    timeout: float | None = None  # seconds for this call instead of the client's (a long poll waits longer)

    @property
    def replayable(self) -> bool:
        return self.method == "GET" or self.repeatable or "Idempotency-Key" in self.headers


@dataclass(frozen=True)
class RetryEvent:
    call: Call[Any]
    attempt: int
    delay: float
    reason: str  # "429 rate_limited", "503 session_busy", "ConnectError", …


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)


def _decode(call: Call[Any], response: httpx.Response) -> Any:
    if response.is_success:
        if call.expect == "text":
            return response.text
        try:
            return response.json()
        except ValueError as exc:
            raise error_from_problem(response.status_code, response.text) from exc
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    raise error_from_problem(response.status_code, body, retry_after=_retry_after(response))


def _params(call: Call[Any]) -> dict[str, Any] | None:
    if not call.params:
        return None
    return {k: v for k, v in call.params.items() if v is not None} or None


class Counter:
    """HTTP requests sent (retries included): what an agent counts as Arbiter calls; and the
    ``traceparent`` of Arbiter's span in the latest answer that had one."""

    def __init__(self) -> None:
        self.requests = 0
        self.retries = 0
        self.traceparent: str | None = None


def _headers(call: Call[Any]) -> dict[str, str]:
    """The call's headers and the trace context, read once per call: its retries carry the same parent."""
    return {**tracing.outgoing(), **call.headers}


def _seen(counter: Counter, response: httpx.Response) -> httpx.Response:
    if (traceparent := response.headers.get("traceparent")) is not None:
        counter.traceparent = traceparent
    return response


def send(
    http: httpx.Client,
    call: Call[Any],
    policy: RetryPolicy,
    counter: Counter,
    on_retry: Callable[[RetryEvent], None] | None,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    attempt = 0
    headers = _headers(call)
    while True:
        counter.requests += 1
        try:
            sent = http.request(
                call.method,
                call.path,
                json=call.json,
                params=_params(call),
                headers=headers,
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
            response = _seen(counter, sent)
        except (*_NOT_SENT, *_LOST) as exc:
            retryable = isinstance(exc, _NOT_SENT) or call.replayable
            delay = policy.delay(attempt, None) if retryable else None
            if delay is None:
                raise ConnectionFailed(f"{type(exc).__name__}: {exc}") from exc
            reason = type(exc).__name__
        else:
            if response.status_code not in RETRY_STATUSES:
                return _decode(call, response)
            try:
                return _decode(call, response)
            except ArbiterError as error:
                if error.code in call.final_codes:
                    raise
                delay = policy.delay(attempt, error.retry_after)
                if delay is None:
                    raise
                reason = f"{error.status} {error.code}"
        if on_retry is not None:
            on_retry(RetryEvent(call, attempt, delay, reason))
        counter.retries += 1
        sleep(delay)
        attempt += 1


async def send_async(
    http: httpx.AsyncClient,
    call: Call[Any],
    policy: RetryPolicy,
    counter: Counter,
    on_retry: Callable[[RetryEvent], None] | None,
) -> Any:
    attempt = 0
    headers = _headers(call)
    while True:
        counter.requests += 1
        try:
            sent = await http.request(
                call.method,
                call.path,
                json=call.json,
                params=_params(call),
                headers=headers,
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
            response = _seen(counter, sent)
        except (*_NOT_SENT, *_LOST) as exc:
            retryable = isinstance(exc, _NOT_SENT) or call.replayable
            delay = policy.delay(attempt, None) if retryable else None
            if delay is None:
                raise ConnectionFailed(f"{type(exc).__name__}: {exc}") from exc
            reason = type(exc).__name__
        else:
            if response.status_code not in RETRY_STATUSES:
                return _decode(call, response)
            try:
                return _decode(call, response)
            except ArbiterError as error:
                if error.code in call.final_codes:
                    raise
                delay = policy.delay(attempt, error.retry_after)
                if delay is None:
                    raise
                reason = f"{error.status} {error.code}"
        if on_retry is not None:
            on_retry(RetryEvent(call, attempt, delay, reason))
        counter.retries += 1
        await asyncio.sleep(delay)
        attempt += 1

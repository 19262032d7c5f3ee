"""``Arbiter`` and ``AsyncArbiter``: every agent and staff operation of the API, on httpx.

Each method is built from the operation's ``Call`` in ``_calls`` (same parameters, same answer type),
so the sync and the async client cannot disagree about what an operation sends. An agent token
(``arb_…``) works on the agent operations, a staff token (``arbu_…``) on the staff ones.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import httpx

from arbiter_client import _calls
from arbiter_client._transport import Call, Counter, RetryEvent, RetryPolicy, send, send_async

if TYPE_CHECKING:
    from arbiter_client.async_session import AsyncSession
    from arbiter_client.session import Session

P = ParamSpec("P")
R = TypeVar("R")
USER_AGENT = "arbiter-client/0.1"


def _op(build: Callable[P, Call[R]]) -> Callable[Concatenate[Arbiter, P], R]:
    def method(self: Arbiter, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self.send(build(*args, **kwargs))
        return result

    method.__name__ = build.__name__
    method.__doc__ = build.__doc__
    method.__wrapped__ = build  # type: ignore[attr-defined]
    return method


def _aop(build: Callable[P, Call[R]]) -> Callable[Concatenate[AsyncArbiter, P], Coroutine[Any, Any, R]]:
    async def method(self: AsyncArbiter, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = await self.send(build(*args, **kwargs))
        return result

    method.__name__ = build.__name__
    method.__doc__ = build.__doc__
    method.__wrapped__ = build  # type: ignore[attr-defined]
    return method


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": USER_AGENT}


class Arbiter:
    """A blocking client. ``max_retries=0`` turns retries off; ``on_retry`` sees each retry."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry: RetryPolicy | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        http: httpx.Client | None = None,
    ):
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.on_retry = on_retry
        self.counter = Counter()
        self._own_http = http is None
        self.http = http or httpx.Client(base_url=base_url.rstrip("/"), headers=_headers(token), timeout=timeout)

    def send(self, call: Call[R]) -> R:
        result: R = send(self.http, call, self.retry, self.counter, self.on_retry)
        return result

    @property
    def last_traceparent(self) -> str | None:
        """Arbiter's span in the latest answer (its ``traceparent``): for a link from the agent's trace."""
        return self.counter.traceparent

    def close(self) -> None:
        if self._own_http:
            self.http.close()

    def __enter__(self) -> Arbiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session(
        self,
        *,
        machine: str | None = None,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Session:
        """A new session of ``machine`` (``session_id`` optional), or, with only ``session_id``, an
        existing one read from the server."""
        from arbiter_client.session import Session

        if machine is not None:
            return Session(self, self.session_create(machine, session_id=session_id, context=context))
        if session_id is None:
            raise ValueError("give machine= to start a session or session_id= to join one")
        return Session(self, self.session_get(session_id))

    # -- agent operations --
    decide = _op(_calls.decide)
    decision = _op(_calls.decision)
    replay = _op(_calls.replay)
    points = _op(_calls.points)
    point = _op(_calls.point)
    machine = _op(_calls.machine)
    session_timeline = _op(_calls.session_timeline)
    session_changes = _op(_calls.session_changes)
    session_create = _op(_calls.session_create)
    session_get = _op(_calls.session_get)
    session_move = _op(_calls.session_move)
    session_event = _op(_calls.session_event)
    session_fields_update = _op(_calls.session_fields_update)
    session_action = _op(_calls.session_action)
    session_interrupt = _op(_calls.session_interrupt)
    session_resume = _op(_calls.session_resume)
    session_anomaly = _op(_calls.session_anomaly)
    session_trace = _op(_calls.session_trace)
    tool_call_check = _op(_calls.tool_call_check)
    tool_call_result = _op(_calls.tool_call_result)
    openapi_document = _op(_calls.openapi_document)
    config = _op(_calls.config)
    config_document = _op(_calls.config_document)
    # -- staff operations --
    simulate = _op(_calls.simulate)
    change_requests = _op(_calls.change_requests)
    change_request_create = _op(_calls.change_request_create)
    change_request = _op(_calls.change_request)
    change_request_approve = _op(_calls.change_request_approve)
    change_request_reject = _op(_calls.change_request_reject)
    change_request_withdraw = _op(_calls.change_request_withdraw)
    decision_map = _op(_calls.decision_map)
    decision_map_csv = _op(_calls.decision_map_csv)
    queue = _op(_calls.queue)
    queue_claim = _op(_calls.queue_claim)
    queue_release = _op(_calls.queue_release)
    queue_return = _op(_calls.queue_return)
    queue_resolve = _op(_calls.queue_resolve)
    tool_breakers = _op(_calls.tool_breakers)
    tool_breaker_change = _op(_calls.tool_breaker_change)
    queue_approve = _op(_calls.queue_approve)
    queue_reject = _op(_calls.queue_reject)


class AsyncArbiter:
    """The same operations for asyncio; use ``async with`` or ``await aclose()``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry: RetryPolicy | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        http: httpx.AsyncClient | None = None,
    ):
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.on_retry = on_retry
        self.counter = Counter()
        self._own_http = http is None
        self.http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=_headers(token), timeout=timeout)

    async def send(self, call: Call[R]) -> R:
        result: R = await send_async(self.http, call, self.retry, self.counter, self.on_retry)
        return result

    @property
    def last_traceparent(self) -> str | None:
        """Arbiter's span in the latest answer (its ``traceparent``): for a link from the agent's trace."""
        return self.counter.traceparent

    async def aclose(self) -> None:
        if self._own_http:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncArbiter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def session(
        self,
        *,
        machine: str | None = None,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> AsyncSession:
        """As ``Arbiter.session``: a new session of ``machine``, or an existing one by ``session_id``."""
        from arbiter_client.async_session import AsyncSession

        if machine is not None:
            return AsyncSession(self, await self.session_create(machine, session_id=session_id, context=context))
        if session_id is None:
            raise ValueError("give machine= to start a session or session_id= to join one")
        return AsyncSession(self, await self.session_get(session_id))

    decide = _aop(_calls.decide)
    decision = _aop(_calls.decision)
    replay = _aop(_calls.replay)
    points = _aop(_calls.points)
    point = _aop(_calls.point)
    machine = _aop(_calls.machine)
    session_timeline = _aop(_calls.session_timeline)
    session_changes = _aop(_calls.session_changes)
    session_create = _aop(_calls.session_create)
    session_get = _aop(_calls.session_get)
    session_move = _aop(_calls.session_move)
    session_event = _aop(_calls.session_event)
    session_fields_update = _aop(_calls.session_fields_update)
    session_action = _aop(_calls.session_action)
    session_interrupt = _aop(_calls.session_interrupt)
    session_resume = _aop(_calls.session_resume)
    session_anomaly = _aop(_calls.session_anomaly)
    session_trace = _aop(_calls.session_trace)
    tool_call_check = _aop(_calls.tool_call_check)
    tool_call_result = _aop(_calls.tool_call_result)
    openapi_document = _aop(_calls.openapi_document)
    config = _aop(_calls.config)
    config_document = _aop(_calls.config_document)
    simulate = _aop(_calls.simulate)
    change_requests = _aop(_calls.change_requests)
    change_request_create = _aop(_calls.change_request_create)
    change_request = _aop(_calls.change_request)
    change_request_approve = _aop(_calls.change_request_approve)
    change_request_reject = _aop(_calls.change_request_reject)
    change_request_withdraw = _aop(_calls.change_request_withdraw)
    decision_map = _aop(_calls.decision_map)
    decision_map_csv = _aop(_calls.decision_map_csv)
    queue = _aop(_calls.queue)
    queue_claim = _aop(_calls.queue_claim)
    queue_release = _aop(_calls.queue_release)
    queue_return = _aop(_calls.queue_return)
    queue_resolve = _aop(_calls.queue_resolve)
    tool_breakers = _aop(_calls.tool_breakers)
    tool_breaker_change = _aop(_calls.tool_breaker_change)
    queue_approve = _aop(_calls.queue_approve)
    queue_reject = _aop(_calls.queue_reject)

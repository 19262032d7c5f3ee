"""``call_tool``: one tool call under Arbiter's policy, the same steps for ``Session`` and ``AsyncSession``.

The steps (issue 25), written once as a generator that yields what to do and is sent what came of it,
so the blocking and the asyncio session cannot disagree:

1. **check** — ``POST /sessions/<id>/tool-calls`` with the state the session is believed to be in and
   the ``operation_id`` (the caller's, else a new one kept for every attempt of this call).
   - ``202 awaiting_approval``: the same check is repeated, with the same id, after a wait that doubles
     from 0.5 s to 5 s, until a person approves (201) or rejects (``ToolCallRejected``); when
     ``max_wait_s`` runs out first, ``AwaitingApproval`` is raised (its ``operation_id`` resumes the wait).
   - ``409 retry_in_progress`` and ``429 tool_concurrency``: contention inside one's own fleet that
     passes by itself; waited for (``retry_after_ms``) within ``max_wait_s``, then raised.
   - ``503 circuit_open`` is raised at once: the breaker exists so that callers fail fast while the
     upstream is down (the agent says so, or hands the conversation over); ``wait_for_breaker=True``
     waits for it like the two above instead.
   - every other refusal (``InvalidToolInput``, ``ToolNotAllowed``, ``StateMismatch`` …) is raised.
2. **run** ``fn(input)`` within the answer's ``timeout_ms``. ``fn`` returns the output, or raises
   ``ToolError(code, message)`` with one of the contract's ``error_codes``. Any other exception is
   reported as ``exception:<type name>`` (an undeclared code: not retried, recorded as an anomaly by
   the server) and a call that outlives its timeout as ``TIMEOUT``; both are then raised to the caller
   chained to a ``ToolGaveUp`` unless the policy says retry.
3. **report** — ``POST /tool-calls/<operation_id>/result`` with the output or the error and the measured
   ``duration_ms``; then follow ``next``: ``done`` returns the output, ``retry`` waits ``retry_after_ms``
   (the server's policy, not bounded by ``max_wait_s``) and checks again with the same id, ``give_up``
   raises ``ToolGaveUp`` (the session has moved per the contract's ``on_exhausted``).
Every answer and every refusal carries the session object; the session takes its position from each.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from arbiter_client.errors import (
    AwaitingApproval,
    CircuitOpen,
    RetryInProgress,
    SessionRefused,
    StateMismatch,
    ToolConcurrency,
    ToolRefused,
)

TIMEOUT = "TIMEOUT"
APPROVAL_FIRST_WAIT_S = 0.5
APPROVAL_MAX_WAIT_S = 5.0


class ToolError(Exception):
    """What a tool function raises for a failure its contract declares (``RATE_LIMIT_EXCEEDED`` …)."""

    def __init__(self, code: str, message: str = ""):
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}" if message else code)


class ToolGaveUp(Exception):
    """The policy gave up on the call (not retryable, or retries exhausted); ``session`` has moved per
    the contract's ``on_exhausted`` already. ``error`` is the last failure reported."""

    def __init__(self, session: Any, operation_id: str, error: Mapping[str, Any], answer: Mapping[str, Any]):
        self.session = session
        self.operation_id = operation_id
        self.error = dict(error)
        self.answer = dict(answer)
        self.code = str(error.get("code", ""))
        super().__init__(f"{operation_id}: gave up after {self.code} (session now in {getattr(session, 'state', '?')})")


@dataclass(frozen=True)
class Check:
    operation_id: str
    expected_state: str


@dataclass(frozen=True)
class Run:
    timeout_s: float


@dataclass(frozen=True)
class Report:
    operation_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Check | Run | Report | Sleep
Outcome = tuple[Any, BaseException | None, float]  # (output, raised, duration in ms) of a Run


def failure(raised: BaseException) -> dict[str, Any]:
    """The ``error`` member reported for what ``fn`` raised."""
    if isinstance(raised, ToolError):
        error: dict[str, Any] = {"code": raised.code}
        if raised.message:
            error["message"] = raised.message[:1000]
        return error
    if isinstance(raised, TimeoutError):
        return {"code": TIMEOUT}
    return {"code": f"exception:{type(raised).__name__}", "message": str(raised)[:1000]}


def policy(
    session: Any, *, operation_id: str | None, max_wait_s: float, wait_for_breaker: bool
) -> Generator[Step, Any, Any]:
    """The steps of one call; ``Check`` is sent the check's answer (a refusal is raised into it),
    ``Run`` an ``Outcome``, ``Report`` the result's answer, ``Sleep`` nothing. Returns the output."""
    op = operation_id or uuid.uuid4().hex
    # Every check of one operation names the state it was asked in: while a person decides, the session
    # waits in the handoff state, and goes back to this one once they have.
    asked_in: str = session.state
    # A call resumed (its id given) while the session waits in the handoff state may have been approved
    # since: the session is back where the call was asked, which a refusal's session object then says.
    resuming = operation_id is not None and bool(session.handed_off)
    waited_s = 0.0
    approval_wait = APPROVAL_FIRST_WAIT_S
    waitable: tuple[type[ToolRefused], ...] = (RetryInProgress, ToolConcurrency)
    if wait_for_breaker:
        waitable = (*waitable, CircuitOpen)
    while True:
        try:
            answer = yield Check(op, asked_in)
        except SessionRefused as refused:
            session._refused(refused)
            if resuming and isinstance(refused, StateMismatch) and refused.state and refused.state != asked_in:
                resuming, asked_in = False, refused.state
                continue
            after = refused.retry_after_ms if isinstance(refused, ToolRefused) else None
            if not isinstance(refused, waitable) or after is None or waited_s >= max_wait_s:
                raise
            pause = min(after / 1000, max_wait_s - waited_s)
            waited_s += pause
            yield Sleep(pause)
            continue
        session.absorb(answer)
        resuming = False
        if answer.get("code") == "awaiting_approval":
            if waited_s >= max_wait_s:
                raise AwaitingApproval("awaiting_approval", 202, dict(answer))
            pause = min(approval_wait, max_wait_s - waited_s)
            waited_s += pause
            approval_wait = min(approval_wait * 2, APPROVAL_MAX_WAIT_S)
            yield Sleep(pause)
            continue
        op = answer.get("operation_id") or op
        output, raised, duration_ms = yield Run(answer.get("timeout_ms", 10000) / 1000)
        body: dict[str, Any] = {"duration_ms": max(0, round(duration_ms))}
        if raised is None:
            body["output"] = output
        else:
            body["error"] = failure(raised)
        try:
            result = yield Report(op, body)
        except SessionRefused as refused:
            session._refused(refused)
            raise
        session.absorb(result)
        following = result.get("next")
        if following == "done":
            if raised is not None:  # an output the server counts as success though fn raised: trust fn
                raise raised
            return output
        if following == "retry":
            yield Sleep(max(0, result.get("retry_after_ms") or 0) / 1000)
            continue
        gave_up = ToolGaveUp(session, op, body.get("error") or {"code": "output_invalid"}, result)
        if raised is not None:
            raise gave_up from raised
        raise gave_up


def _run_sync(fn: Callable[[Any], Any], input: Any, timeout_s: float) -> Outcome:
    started = time.perf_counter()
    # A thread so the deadline holds even for a tool that hangs; it is left to finish on its own.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="arbiter-tool")
    try:
        future = pool.submit(fn, input)
        try:
            output = future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            return None, TimeoutError(f"no answer within {timeout_s:.3f} s"), (time.perf_counter() - started) * 1000
        except Exception as raised:  # every failure of the tool is reported, none swallowed
            return None, raised, (time.perf_counter() - started) * 1000
        return output, None, (time.perf_counter() - started) * 1000
    finally:
        pool.shutdown(wait=False)


def drive(
    session: Any,
    name: str,
    input: Mapping[str, Any],
    fn: Callable[[Any], Any],
    *,
    operation_id: str | None,
    max_wait_s: float,
    wait_for_breaker: bool,
    sleep: Callable[[float], None],
) -> Any:
    steps = policy(session, operation_id=operation_id, max_wait_s=max_wait_s, wait_for_breaker=wait_for_breaker)
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        try:
            step = steps.throw(thrown) if thrown is not None else steps.send(sent)
        except StopIteration as done:
            return done.value
        sent, thrown = None, None
        try:
            if isinstance(step, Check):
                sent = session.arbiter.tool_call_check(
                    session.session_id,
                    name,
                    dict(input),
                    expected_state=step.expected_state,
                    operation_id=step.operation_id,
                )
            elif isinstance(step, Run):
                sent = _run_sync(fn, input, step.timeout_s)
            elif isinstance(step, Report):
                sent = session.arbiter.tool_call_result(step.operation_id, **step.body)
            else:
                sleep(step.seconds)
        except SessionRefused as refused:
            thrown = refused


async def _run_async(fn: Callable[[Any], Awaitable[Any]], input: Any, timeout_s: float) -> Outcome:
    started = time.perf_counter()
    try:
        output = await asyncio.wait_for(fn(input), timeout_s)
    except TimeoutError:
        return None, TimeoutError(f"no answer within {timeout_s:.3f} s"), (time.perf_counter() - started) * 1000
    except Exception as raised:
        return None, raised, (time.perf_counter() - started) * 1000
    return output, None, (time.perf_counter() - started) * 1000


async def drive_async(
    session: Any,
    name: str,
    input: Mapping[str, Any],
    fn: Callable[[Any], Awaitable[Any]],
    *,
    operation_id: str | None,
    max_wait_s: float,
    wait_for_breaker: bool,
    sleep: Callable[[float], Awaitable[None]],
) -> Any:
    steps = policy(session, operation_id=operation_id, max_wait_s=max_wait_s, wait_for_breaker=wait_for_breaker)
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        try:
            step = steps.throw(thrown) if thrown is not None else steps.send(sent)
        except StopIteration as done:
            return done.value
        sent, thrown = None, None
        try:
            if isinstance(step, Check):
                sent = await session.arbiter.tool_call_check(
                    session.session_id,
                    name,
                    dict(input),
                    expected_state=step.expected_state,
                    operation_id=step.operation_id,
                )
            elif isinstance(step, Run):
                sent = await _run_async(fn, input, step.timeout_s)
            elif isinstance(step, Report):
                sent = await session.arbiter.tool_call_result(step.operation_id, **step.body)
            else:
                await sleep(step.seconds)
        except SessionRefused as refused:
            thrown = refused

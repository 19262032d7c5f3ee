"""An attempt's result: recorded once, judged by the contract's error policy, answered ``done``, ``retry``
or ``give_up``.

The session's lock is taken first (a give-up moves the session; checks of the session take the same lock
first), then the call's. A result for an attempt that already has one gets the stored answer again,
unchanged: a runtime that lost the answer may report again. An output is checked against the contract's
output schema (a mismatch is a failure with the code ``output_invalid``: the contract's policy for it
when declared, else not retryable). An error code the contract does not declare is not retryable and is
recorded as an ``undeclared_tool_error`` anomaly. Every result leaves the tool's concurrency slot and
counts for its breaker (``agents.tools.gate``): every failure counts, whatever its code — the breaker
judges the upstream, and a business error that floods it is a sign too — except a code the breaker's
``ignore_codes`` names (a rate limit says the upstream is alive): that failure is not recorded at all,
and a half-open trial that ends so gives its trial slot back. A result after the attempt's
deadline is still recorded; its answer says ``late: true``.

The policy used is the contract of the active revision (as for the check that started the attempt).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.sessions.feedback import FeedbackBasis
from agents.sessions.models import Session
from agents.sessions.presenters import session_state
from agents.sessions.services import AgentRef, _extra, anomaly_record
from agents.tools import gate, statements
from agents.tools.codes import UNDECLARED_TOOL_ERROR
from agents.tools.contracts import active_config, masked_text, summary
from agents.tools.errors import NoAttemptInFlight, UnknownOperation
from agents.tools.giveup import give_up_move
from agents.tools.models import AttemptOutcome, ToolAttempt, ToolCall, ToolCallStatus
from agents.tools.policy import DONE, GIVE_UP, OUTPUT_INVALID, RETRY, after_failure, policy_for
from agents.tools.services import locked_with_feedback
from decision_service import metrics, tracing
from decision_service.errors import DomainError
from rules.engine.tools import CompiledTool

_RESULT_FIELDS = ["finished_at", "duration_ms", "outcome", "error_code", "declared", "message", "output_summary"]
_random = random.SystemRandom()  # the jitter's draw: retries of many agents spread out


def tool_call_result(
    *,
    agent: AgentRef,
    operation_id: str,
    output: Any = None,
    error: Mapping[str, Any] | None = None,
    duration_ms: int,
) -> dict[str, Any]:
    """Record the result of the operation's attempt in flight (``output``, or ``error`` with its ``code``
    and ``message``); the answer (see the module docstring)."""
    with tracing.span("arbiter.tool_call.result") as span:
        if span is not None:
            span.set_attribute("arbiter.tool.operation_id", operation_id)
        if "\x00" in operation_id:  # PostgreSQL cannot compare text holding a NUL; no id holds one
            raise UnknownOperation(f"This agent has no operation {operation_id!r}.")
        tools = active_config().tools
        with transaction.atomic():
            # PostgreSQL: the session, the call and its attempt locked in one statement (the session first),
            # for every result but one for a call that never started an attempt (it has none to answer).
            found = statements.result_locked(agent.pk, operation_id) if statements.folded() else None
            current: ToolAttempt | None
            if found is not None:
                session, basis, current = found
                call = current.call
            else:
                session_key = statements.session_key_of(agent.pk, operation_id)
                if session_key is None:
                    raise UnknownOperation(f"This agent has no operation '{operation_id}'.")
                session, basis = locked_with_feedback(agent, session_key)
                call, current = _call_locked(agent, operation_id)
            outcome: dict[str, Any] | DomainError
            if current is not None and current.finished_at is not None:
                outcome = dict(call.answer or {})  # a repeat: the answer as given the first time
            elif current is None or call.status != ToolCallStatus.RUNNING:
                outcome = NoAttemptInFlight(
                    f"The operation '{operation_id}' has no attempt waiting for a result ({call.status}).",
                    extra=_extra(session, operation_id=operation_id),
                )
            else:
                outcome = _record(
                    session, agent, tools.get(call.tool), call, current, output, error, duration_ms, basis
                )
        if isinstance(outcome, DomainError):
            raise outcome
        if span is not None:
            result_traced(span, session.key, call.tool, error, outcome)
        return outcome


def _call_locked(agent: AgentRef, operation_id: str) -> tuple[ToolCall, ToolAttempt | None]:
    """The call and its current attempt (None before its first), both locked: one statement when the
    call has an attempt, which is every call a result can be for."""
    current = statements.attempt_locked(agent.pk, operation_id)
    if current is not None:
        return current.call, current
    return ToolCall.objects.select_for_update().get(agent_id=agent.pk, operation_id=operation_id), None


def _record(
    session: Session,
    agent: AgentRef,
    compiled: CompiledTool | None,
    call: ToolCall,
    current: ToolAttempt,
    output: Any,
    error: Mapping[str, Any] | None,
    duration_ms: int,
    basis: FeedbackBasis,
) -> dict[str, Any]:
    now = timezone.now()
    late = now > current.deadline
    codes = compiled.error_codes if compiled is not None else {}
    contract = compiled.contract if compiled is not None else {}
    current.finished_at, current.duration_ms = now, duration_ms
    code = ""
    if error is None:
        current.output_summary = summary(output)
        problems = compiled.output_errors(output) if compiled is not None else []
        if problems:
            code = OUTPUT_INVALID
            current.outcome = AttemptOutcome.OUTPUT_INVALID
            current.message = masked_text("; ".join(f"{p.pointer or '(the output)'}: {p.message}" for p in problems))
        else:
            current.outcome = AttemptOutcome.OK
    else:
        code = str(error["code"])
        current.outcome = AttemptOutcome.ERROR
        current.message = masked_text(str(error.get("message") or ""))
    policy = policy_for(codes, code) if code else None
    current.error_code = code
    current.declared = policy is None or policy.declared
    # As gate_enter, a tool with neither a breaker nor a limit holds no slot: its result does not look
    # one up (a Redis round trip, or a savepoint and the breaker row's lock). A tool gone from the
    # revision still gives its slot back; one whose limit was dropped since the check leaves a slot
    # nobody is counted against, given back at the attempt's deadline.
    if compiled is None or contract.get("circuit_breaker") is not None or contract.get("max_concurrent") is not None:
        gate.gate_leave(call.tool, lease=f"{call.pk}:{current.attempt}")
    breaker = contract.get("circuit_breaker")
    if code and code in (breaker or {}).get("ignore_codes", ()):
        if current.breaker_state == gate.HALF_OPEN:
            gate.breaker_record(call.tool, breaker=breaker, ok=None)
    else:
        gate.breaker_record(call.tool, breaker=breaker, ok=policy is None)
    answer: dict[str, Any] = {"operation_id": call.operation_id, "late": late}
    if policy is None:
        call.status = ToolCallStatus.DONE
        answer.update(next=DONE, attempt=current.attempt)
    else:
        # Arbiter's own output_invalid, undeclared, is no anomaly: the contract's default for it applies.
        if not current.declared and error is not None:
            anomaly_record(
                session,
                agent=agent,
                session_id=session.key,
                code=UNDECLARED_TOOL_ERROR,
                detail=f"'{call.tool}' answered the error code {code!r}, which its contract does not declare; "
                "not retried",
                # The upstream's doing, not the model's: recorded, never counted toward max_anomalies.
                counted=False,
            )
        step = after_failure(policy, current.attempt, _random.random())
        transaction.on_commit(
            partial(
                metrics.tool_attempt_failed,
                tool=call.tool,
                code=code,
                declared=current.declared,
                retry=step.next == RETRY,
            )
        )
        if step.next == RETRY:
            assert step.retry_after_ms is not None
            call.status = ToolCallStatus.RETRY_WAIT
            call.retry_at = now + dt.timedelta(milliseconds=step.retry_after_ms)
            answer.update(next=RETRY, retry_after_ms=step.retry_after_ms, attempt=current.attempt + 1)
        else:
            call.status = ToolCallStatus.GAVE_UP
            give_up_move(session, agent, call, contract.get("on_exhausted"))
            answer.update(next=GIVE_UP, attempt=current.attempt)
    # The hints read with the lock are the ones now unless this result recorded an anomaly or moved the
    # session (an undeclared error, a give-up): then they are read again.
    recorded = call.status == ToolCallStatus.GAVE_UP or (error is not None and not current.declared)
    answer["session"] = session_state(session, feedback=None if recorded else basis.hints())
    call.answer = answer
    # The attempt's result and the call's answer in one statement (PostgreSQL); nothing between here and
    # the locking read reads either row back.
    statements.update_both(current, _RESULT_FIELDS, call, ["status", "retry_at", "answer", "updated_at"])
    return answer


def result_traced(
    span: Any, session_key: str, tool: str, error: Mapping[str, Any] | None, answer: Mapping[str, Any]
) -> None:
    """The result span's attributes; a tool's error is an error of the trace (kept whatever the ratio), its
    declared code the error's type — the code, never the message."""
    attributes = {
        "arbiter.session.id": session_key,
        "arbiter.tool.name": tool,
        "arbiter.tool.attempt": answer.get("attempt"),
        "arbiter.tool.next": answer.get("next"),
    }
    tracing.set_attributes(span, attributes)
    if error is not None:
        tracing.mark_error(span, str(error.get("code") or "tool_error"))


def failure_next(attempt: ToolAttempt, call: ToolCall) -> str | None:
    """What the policy made of a failed attempt, read back for the timeline: ``retry`` when another attempt
    followed (or is due), ``give_up`` when the operation ended with it; None for an attempt that did not fail
    or has no result yet."""
    if attempt.finished_at is None or attempt.outcome == AttemptOutcome.OK:
        return None
    if call.attempt > attempt.attempt or call.status == ToolCallStatus.RETRY_WAIT:
        return RETRY
    return GIVE_UP

"""The tool-call check: may this agent call this tool, with this input, from this session now?

A check follows the session services' rules (``agents.sessions.services``): it takes the session's lock,
records the anomalies a refusal is (a tool outside the state's whitelist, an input its contract refuses)
and raises the refusal only once they are committed. In order, a check is refused when the agent has no
such session (``unknown_session``), the session is with a person (``session_handed_off``), not in
``expected_state`` (``state_mismatch``) or has ended (``session_closed``); when the state's actions do not
name the tool (``tool_not_allowed``), the active revision has no contract for it (``unknown_tool``) or the
input does not match the contract's input schema (``invalid_tool_input``). Then the operation:

- an ``operation_id`` this agent used before names one call — another session, tool or input is
  ``operation_conflict``; a call in flight gets the same answer again (no second attempt: a model's "let me
  try again" does not duplicate the call); one between retries waits for its ``retry_at``
  (``retry_in_progress``) and then starts its next attempt, if the policy allows one (else
  ``retries_exhausted``); a finished one is ``operation_finished``; one waiting for a person is
  ``awaiting_approval`` again, a rejected one ``tool_call_rejected``;
- a new one (or an approved one) must not start while another operation of this session in this state
  waits for its retry (``retry_in_progress``: the state-level retry lease), waits for a person when the
  state is in the contract's ``needs_approval_in`` (``awaiting_approval``), and passes the tool's gate
  last (breaker and concurrency, ``agents.tools.gate``: ``circuit_open``, ``tool_concurrency``).

An attempt that may go ahead is written (``ToolAttempt``) with its deadline, and answered ``201``.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.errors import SessionClosed, StateMismatch, UnknownSession
from agents.sessions.feedback import FeedbackBasis
from agents.sessions.models import Session
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.reads import session_lock, session_lock_with_feedback
from agents.sessions.services import (
    AgentRef,
    _closed,
    _extra,
    _mismatch,
    anomaly_record,
    session_action,
    session_allowed_actions,
    session_handed_off,
)
from agents.tools import approvals, gate, statements
from agents.tools.codes import INVALID_TOOL_INPUT, TOOL_NOT_ALLOWED
from agents.tools.contracts import active_config, input_digest, input_masked, masked_text, pointer_errors
from agents.tools.errors import (
    AwaitingApproval,
    InvalidToolInput,
    OperationConflict,
    OperationFinished,
    RetriesExhausted,
    RetryInProgress,
    ToolCallRejected,
    ToolNotAllowed,
    UnknownTool,
)
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from agents.tools.policy import attempts_allowed, policy_for
from decision_service import metrics, tracing
from decision_service.db import new_instance
from decision_service.errors import DomainError
from rules.engine.compiler import CompiledConfig
from rules.engine.tools import CompiledTool


@dataclass(frozen=True)
class Started:
    """An attempt that may go ahead: the ``201`` answer."""

    operation_id: str
    attempt: int
    deadline: dt.datetime
    timeout_ms: int
    session: SessionState


def new_operation_id() -> str:
    return str(uuid.uuid4())


def _locked(agent: AgentRef, session_id: str) -> Session:
    if "\x00" in session_id:  # no session id holds one, and PostgreSQL cannot compare text that does
        raise UnknownSession(f"This agent has no session {session_id!r}.")
    session = session_lock(agent_id=agent.pk, key=session_id)
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session


def locked_with_feedback(agent: AgentRef, session_id: str) -> tuple[Session, FeedbackBasis]:
    """``_locked``, and the session's feedback read in the same statement (PostgreSQL): an answer that
    records no anomaly shows its hints without reading them again."""
    if "\x00" in session_id:
        raise UnknownSession(f"This agent has no session {session_id!r}.")
    session, basis = session_lock_with_feedback(agent_id=agent.pk, key=session_id)
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session, basis


def tool_call_check(
    *,
    agent: AgentRef,
    session_id: str,
    tool: str,
    input: Mapping[str, Any],
    expected_state: str | None,
    operation_id: str | None = None,
) -> Started:
    """Check a call of ``tool`` (see the module docstring); the attempt it starts, or the refusal.
    ``expected_state`` None: the state the session is in once locked (the MCP gateway's calls, whose
    caller names no state: read apart, it would cost a query and could only be older)."""
    with tracing.span("arbiter.tool_call.check") as span:
        operation_id = operation_id or new_operation_id()
        if span is not None:
            attributes = {
                "arbiter.session.id": session_id,
                "arbiter.tool.name": tool,
                "arbiter.tool.operation_id": operation_id,
            }
            span.set_attributes(attributes)
        digest = input_digest(input)
        config = active_config()
        with transaction.atomic():
            session, basis = locked_with_feedback(agent, session_id)
            expected = session.state if expected_state is None else expected_state
            outcome = _check_locked(session, agent, config, tool, dict(input), digest, expected, operation_id, basis)
        if isinstance(outcome, DomainError):
            raise outcome
        if span is not None:
            span.set_attribute("arbiter.tool.attempt", outcome.attempt)
        return outcome


def _refusal_extra(session: Session, operation_id: str, **more: Any) -> dict[str, Any]:
    return _extra(session, operation_id=operation_id, **more)


def _check_locked(
    session: Session,
    agent: AgentRef,
    config: CompiledConfig,
    tool: str,
    input: dict[str, Any],
    digest: str,
    expected_state: str,
    operation_id: str,
    basis: FeedbackBasis,
) -> Started | DomainError:
    if statements.folded() and (
        started := _start_plain(session, agent, config, tool, input, digest, operation_id, basis, expected_state)
    ):
        return started
    existing = statements.call_by_operation(agent.pk, operation_id)
    if (
        existing is not None
        and existing.status == ToolCallStatus.AWAITING_APPROVAL
        and (existing.session_id, existing.tool, existing.input_digest) == (session.pk, tool, digest)
        and not approvals.approval_lapse(session, existing)
    ):
        # The wait for a person hands the session off: asking again is no move of a handed-off session.
        # (A wait an operator ended without deciding has just been settled as rejected: checked below.)
        return _awaiting(session, existing)
    if handed_off := session_handed_off(session, agent, f"a call of the tool '{tool}'"):
        handed_off.extra["operation_id"] = operation_id
        return handed_off
    if session.state != expected_state:
        return _with_operation(_mismatch(session, expected_state), operation_id)
    if session.state in session.machine.terminal_states:
        return _with_operation(_closed(session), operation_id)
    whitelist = session_allowed_actions(session)
    if tool not in whitelist:
        detail = f"'{tool}' is not allowed in '{session.state}'; allowed: {', '.join(whitelist) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=TOOL_NOT_ALLOWED, detail=detail)
        return ToolNotAllowed(
            detail + ".",
            extra=_refusal_extra(
                session, operation_id, allowed_actions=session_allowed_actions(session), handed_off=handoff is not None
            ),
        )
    compiled = config.tools.get(tool)
    if compiled is None:
        return UnknownTool(
            f"The active configuration has no contract for the tool '{tool}'.",
            extra=_refusal_extra(session, operation_id),
        )
    if refusal := input_refusal(session, agent, compiled, input, operation_id=operation_id):
        return refusal
    now = timezone.now()
    if existing is not None:
        return _existing(session, agent, compiled, existing, tool, digest, now, basis)
    if waiting := _lease(session, now, exclude=None):
        return waiting
    call = ToolCall(
        operation_id=operation_id,
        agent_id=agent.pk,
        session=session,
        tool=tool,
        state=session.state,
        revision=config.revision or None,
        risk=compiled.risk,
        input=input_masked(input),
        input_digest=digest,
        status=ToolCallStatus.RUNNING,
    )
    if session.state in (compiled.contract.get("needs_approval_in") or []):
        return _await_approval(session, agent, call)
    return _start(session, compiled, call, now, basis)


def _start_plain(
    session: Session,
    agent: AgentRef,
    config: CompiledConfig,
    tool: str,
    input: dict[str, Any],
    digest: str,
    operation_id: str,
    basis: FeedbackBasis,
    expected_state: str,
) -> Started | None:
    """The common check in one statement (PostgreSQL): a new operation of a tool with neither a breaker nor a
    limit, nor an approval in this state, that every check above lets through, started as ``_start`` would
    start it (the retry lease and the operation id checked in the INSERT itself). None for anything else, and
    for an operation id already used or a lease held: nothing written, the caller goes the long way, whose
    every refusal and repeat is as it was. No savepoint: there is no gate to undo, and the INSERT's
    ``ON CONFLICT DO NOTHING`` cannot fail on the operation id."""
    state = session.state
    if state != expected_state or state == session.machine.handoff_state or state in session.machine.terminal_states:
        return None
    compiled = config.tools.get(tool)
    if compiled is None or tool not in session.machine.actions.get(state, ()):  # session_allowed_actions
        return None
    contract = compiled.contract
    if (
        contract.get("circuit_breaker") is not None
        or contract.get("max_concurrent") is not None
        or state in (contract.get("needs_approval_in") or ())
        or compiled.input_errors(input)
    ):
        return None
    now = timezone.now()
    timeout_ms = int(contract.get("timeout_ms") or 0) or 10_000
    deadline = now + dt.timedelta(milliseconds=timeout_ms)
    call = new_instance(
        ToolCall,
        operation_id=operation_id,
        agent_id=agent.pk,
        session_id=session.pk,
        tool=tool,
        state=state,
        revision=config.revision or None,
        risk=compiled.risk,
        input=input_masked(input),
        input_digest=digest,
        status=ToolCallStatus.RUNNING,
        attempt=1,
        deadline=deadline,
    )
    ToolCall.session.field.set_cached_value(call, session)  # as ToolCall(session=session) would
    current = new_instance(
        ToolAttempt, attempt=1, tool=tool, started_at=now, deadline=deadline, breaker_state=gate.CLOSED
    )
    if not statements.call_start_new(call, current, now):
        return None
    transaction.on_commit(partial(metrics.tool_attempt_started, tool=tool))
    return _started(call, current, session, basis)


def _with_operation(refusal: StateMismatch | SessionClosed, operation_id: str) -> DomainError:
    refusal.extra["operation_id"] = operation_id
    return refusal


def input_refusal(
    session: Session, agent: AgentRef, compiled: CompiledTool, input: Any, *, operation_id: str | None
) -> InvalidToolInput | None:
    """The refusal of an input the contract's schema does not take (recorded as an anomaly), or None.
    ``errors``: JSON pointer into the input (``""``: the input as a whole) → messages."""
    problems = compiled.input_errors(input)
    if not problems:
        return None
    errors = pointer_errors(problems)
    detail = f"The input of '{compiled.name}' does not match its contract: " + "; ".join(
        f"{pointer or '(the input)'}: {', '.join(messages)}" for pointer, messages in errors.items()
    )
    # The messages quote the input: the anomaly keeps them masked, as the call's input is kept.
    handoff = anomaly_record(
        session, agent=agent, session_id=session.key, code=INVALID_TOOL_INPUT, detail=masked_text(detail, limit=2000)
    )
    more: dict[str, Any] = {"handed_off": handoff is not None}
    if operation_id is not None:
        more["operation_id"] = operation_id
    return InvalidToolInput(detail + ".", errors=errors, extra=_extra(session, **more))


def _retry_after_ms(retry_at: dt.datetime, now: dt.datetime) -> int:
    return max(1, math.ceil((retry_at - now).total_seconds() * 1000))


def _lease(session: Session, now: dt.datetime, *, exclude: int | None) -> RetryInProgress | None:
    """Seed 000's state-level retry lock: while an operation of this session in this state waits for its
    retry, no other operation starts there (retries of one failing upstream do not snowball)."""
    first = statements.lease_holder(session.pk, session.state, ToolCallStatus.RETRY_WAIT, now, exclude)
    if first is None:
        return None
    operation_id, tool, retry_at = first
    after = _retry_after_ms(retry_at, now)
    return RetryInProgress(
        f"The operation {operation_id} ({tool}) waits to retry in '{session.state}' for {after} ms; "
        "no other call starts there until then.",
        extra=_extra(session, retry_after_ms=after, waiting_operation_id=operation_id),
    )


def _existing(
    session: Session,
    agent: AgentRef,
    compiled: CompiledTool,
    call: ToolCall,
    tool: str,
    digest: str,
    now: dt.datetime,
    basis: FeedbackBasis,
) -> Started | DomainError:
    op = call.operation_id
    if (call.session_id, call.tool, call.input_digest) != (session.pk, tool, digest):
        return OperationConflict(
            f"The operation id {op!r} names another call (another session, tool or input); use a new id.",
            extra=_refusal_extra(session, op),
        )
    status = call.status
    if status == ToolCallStatus.RUNNING:
        current = call.attempts.get(attempt=call.attempt)
        return _started(call, current, session, basis)
    if status == ToolCallStatus.REJECTED:
        return ToolCallRejected(
            # No decider: the session left the queue undecided (approvals.approval_lapse).
            (f"A person rejected the call {op!r}" if call.decided_by_id else f"The call {op!r} was not approved")
            + (f": {call.decision_note}" if call.decision_note else "."),
            extra=_refusal_extra(session, op),
        )
    if status in (ToolCallStatus.DONE, ToolCallStatus.GAVE_UP):
        return OperationFinished(
            f"The operation {op!r} has finished ({status}); a new call needs a new operation id.",
            extra=_refusal_extra(session, op, answer=call.answer),
        )
    if status == ToolCallStatus.RETRY_WAIT:
        assert call.retry_at is not None
        if call.retry_at > now:
            after = _retry_after_ms(call.retry_at, now)
            return RetryInProgress(
                f"The operation {op!r} may retry in {after} ms.",
                extra=_refusal_extra(session, op, retry_after_ms=after),
            )
        last = call.attempts.filter(attempt=call.attempt).values_list("error_code", flat=True).first() or ""
        allowed = attempts_allowed(policy_for(compiled.error_codes, last))
        if call.attempt >= allowed:
            return RetriesExhausted(
                f"The operation {op!r} has had {call.attempt} attempts; its policy allows {allowed}.",
                extra=_refusal_extra(session, op, attempts=call.attempt),
            )
    # A retry that is due, or a call a person approved: its next attempt, under the lease like any other.
    if waiting := _lease(session, now, exclude=call.pk):
        return waiting
    return _start(session, compiled, call, now, basis)


def _awaiting(session: Session, call: ToolCall) -> AwaitingApproval:
    return AwaitingApproval(
        f"The call {call.operation_id!r} of '{call.tool}' waits for a person's approval; the session is in the "
        "human queue. Ask again with the same operation id once it is approved.",
        extra=_refusal_extra(session, call.operation_id),
    )


def _await_approval(session: Session, agent: AgentRef, call: ToolCall) -> DomainError:
    call.status = ToolCallStatus.AWAITING_APPROVAL
    try:
        with transaction.atomic():
            call.save(force_insert=True)
    except IntegrityError:
        return _taken(session, call.operation_id)
    approvals.call_await_approval(session, call, agent=agent)
    return _awaiting(session, call)


def _taken(session: Session, operation_id: str) -> OperationConflict:
    # Unique per agent: a concurrent check of another session took the id first (one session's checks
    # are ordered by its lock, so it is never a repeat of this one).
    return OperationConflict(
        f"The operation id {operation_id!r} names another call; use a new id.",
        extra=_refusal_extra(session, operation_id),
    )


def _start(
    session: Session, compiled: CompiledTool, call: ToolCall, now: dt.datetime, basis: FeedbackBasis
) -> Started | DomainError:
    """The next attempt of ``call`` through the tool's gate, written; or the gate's refusal, nothing written."""
    contract = compiled.contract
    attempt = call.attempt + 1
    timeout_ms = int(contract.get("timeout_ms") or 0) or 10_000
    deadline = now + dt.timedelta(milliseconds=timeout_ms)
    new = call.pk is None
    try:
        with transaction.atomic():  # a savepoint: a gate's refusal leaves no call and no attempt behind
            if new:
                # Inserted as it will be once its first attempt is written: no UPDATE of the row after.
                call.status, call.attempt, call.deadline = ToolCallStatus.RUNNING, attempt, deadline
                statements.insert(call)
            permit = gate.gate_enter(
                compiled.name,
                breaker=contract.get("circuit_breaker"),
                max_concurrent=contract.get("max_concurrent"),
                lease=f"{call.pk}:{attempt}",
                deadline_ms=int(deadline.timestamp() * 1000),
            )
            current = ToolAttempt(
                call=call,
                attempt=attempt,
                tool=call.tool,
                started_at=now,
                deadline=deadline,
                breaker_state=permit.state,
            )
            statements.insert(current)
            if not new:
                call.status, call.attempt, call.deadline = ToolCallStatus.RUNNING, attempt, deadline
                call.retry_at = None
                call.save(update_fields=["status", "attempt", "deadline", "retry_at", "updated_at"])
    except IntegrityError:
        return _taken(session, call.operation_id)
    except DomainError as refusal:  # circuit_open, tool_concurrency: the answer carries the session
        refusal.extra.update(_refusal_extra(session, call.operation_id))
        return refusal
    transaction.on_commit(partial(metrics.tool_attempt_started, tool=call.tool))
    return _started(call, current, session, basis)


def _started(call: ToolCall, current: ToolAttempt, session: Session, basis: FeedbackBasis) -> Started:
    # No anomaly was recorded on the way to a start: the hints read with the lock are the ones now.
    timeout_ms = round((current.deadline - current.started_at).total_seconds() * 1000)
    return Started(
        operation_id=call.operation_id,
        attempt=current.attempt,
        deadline=current.deadline,
        timeout_ms=timeout_ms,
        session=session_state(session, feedback=basis.hints()),
    )


def action_check(*, agent: AgentRef, session_id: str, action: str, params: Mapping[str, Any] | None) -> SessionState:
    """``POST /sessions/<id>/actions``: the state's whitelist (``session_action``), then, when ``params``
    were sent and the action names a tool with a contract in the active revision, ``params`` against its
    input schema (``invalid_tool_input``, an anomaly). ``None``: the whitelist only (may this action be
    taken here at all?). Returns the session object when the checks let the action through."""
    tools = active_config().tools
    with transaction.atomic():
        try:
            # Inside this transaction: the session stays locked, and a refusal's anomaly is kept.
            shown = session_action(agent=agent, session_id=session_id, action=action)
        except DomainError as refused:
            outcome: SessionState | DomainError = refused
        else:
            compiled = tools.get(action)
            refusal = None
            if compiled is not None and params is not None:
                session = _locked(agent, session_id)
                refusal = input_refusal(session, agent, compiled, dict(params), operation_id=None)
            outcome = shown if refusal is None else refusal
    if isinstance(outcome, DomainError):
        raise outcome
    return outcome

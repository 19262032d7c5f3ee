"""Refusals of the tool-call API, each with a stable code (mapped to problem+json in one handler)."""

from __future__ import annotations

from decision_service.errors import DomainError


class UnknownTool(DomainError):
    """The state's actions name the tool, but the active revision has no contract for it."""

    code = "unknown_tool"
    status = 422
    title = "No contract for this tool"


class ToolNotAllowed(DomainError):
    code = "tool_not_allowed"
    status = 422
    title = "Tool not allowed in this state"


class InvalidToolInput(DomainError):
    """``errors``: JSON pointer into the input → messages."""

    code = "invalid_tool_input"
    status = 422
    title = "The tool's input does not match its contract"


class CircuitOpen(DomainError):
    """``retry_after_ms``: when the breaker lets a trial call through."""

    code = "circuit_open"
    status = 503
    title = "The tool's circuit breaker is open"


class RetryInProgress(DomainError):
    """An operation of this session in this state waits for its retry (``retry_after_ms``)."""

    code = "retry_in_progress"
    status = 409
    title = "A retry is pending in this state"


class ToolConcurrency(DomainError):
    code = "tool_concurrency"
    status = 429
    title = "Too many calls of this tool in flight"


class AwaitingApproval(DomainError):
    """Not a failure: the call waits for a person; the session is in the human queue."""

    code = "awaiting_approval"
    status = 202
    title = "The call waits for a person's approval"


class ToolCallRejected(DomainError):
    code = "tool_call_rejected"
    status = 422
    title = "A person rejected the call"


class UnknownOperation(DomainError):
    code = "unknown_operation"
    status = 404
    title = "Unknown operation"


class OperationConflict(DomainError):
    """An operation id reused for another session, tool or input."""

    code = "operation_conflict"
    status = 409
    title = "The operation id names another call"


class OperationFinished(DomainError):
    """The operation is done or gave up (``answer``: its last answer); a new call needs a new id."""

    code = "operation_finished"
    status = 409
    title = "The operation has finished"


class RetriesExhausted(DomainError):
    code = "retries_exhausted"
    status = 409
    title = "No attempts left"


class NoAttemptInFlight(DomainError):
    """A result for an operation that has no attempt waiting for one."""

    code = "no_attempt_in_flight"
    status = 409
    title = "No attempt waits for a result"


class NotAwaitingApproval(DomainError):
    code = "not_awaiting_approval"
    status = 409
    title = "The call does not wait for approval"

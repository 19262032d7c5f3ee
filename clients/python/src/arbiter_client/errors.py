"""problem+json answers as exceptions, one class per documented ``code``.

Every refusal the server sends is ``application/problem+json`` with a stable snake_case ``code``
(docs/openapi.yaml, ``ProblemCode``). The client raises the class registered for that code, or
``ArbiterError`` itself for a code it does not know yet: a newer server adding a code never breaks an
older client, and ``except ArbiterError`` catches everything the server refuses. Answers that are not
problem documents (a proxy's HTML error page) raise ``ArbiterError`` with code ``unexpected_response``;
a request that never got an answer raises ``ConnectionFailed``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ArbiterError(Exception):
    """A refusal from the server (or no usable answer); ``code``, ``status`` and the whole ``problem``."""

    code: str
    status: int
    problem: dict[str, Any]

    def __init__(
        self, code: str, status: int, problem: dict[str, Any] | None = None, *, retry_after: float | None = None
    ):
        self.code = code
        self.status = status
        self.problem = dict(problem or {})
        self.retry_after = retry_after
        super().__init__(f"{status} {code}: {self.problem.get('detail', '')}".rstrip(": "))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def errors(self) -> dict[str, Any]:
        """The per-field problems of an ``invalid_request`` (empty otherwise)."""
        value = self.problem.get("errors")
        return value if isinstance(value, dict) else {}

    # The session facts a refusal about a session carries: today as top-level extension members,
    # later (issue 23) also as a ``session`` object. Both are read, the object first.
    def _session_value(self, name: str) -> Any:
        session = self.problem.get("session")
        if isinstance(session, dict) and name in session:
            return session[name]
        return self.problem.get(name)

    @property
    def state(self) -> str | None:
        value = self._session_value("state")
        return value if isinstance(value, str) else None

    @property
    def seq(self) -> int | None:
        value = self._session_value("seq")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def allowed_transitions(self) -> list[str] | None:
        value = self._session_value("allowed_transitions")
        return list(value) if isinstance(value, list) else None

    @property
    def handed_off(self) -> bool:
        return self._session_value("handed_off") is True


class ConnectionFailed(ArbiterError):
    """No answer: the connection failed or timed out (after the retries allowed)."""

    def __init__(self, message: str):
        super().__init__("connection_failed", 0, {"detail": message})


class UnexpectedResponse(ArbiterError):
    """An answer that is not the JSON the operation documents (e.g. a proxy's HTML page)."""


class _Coded(ArbiterError):
    code_name: ClassVar[str] = ""


class MalformedJson(_Coded):
    code_name = "malformed_json"


class DisallowedHost(_Coded):
    code_name = "disallowed_host"


class NotAuthenticated(_Coded):
    code_name = "not_authenticated"


class PermissionDenied(_Coded):
    code_name = "permission_denied"


class PointNotAllowed(_Coded):
    code_name = "point_not_allowed"


class NotFound(_Coded):
    """Base of every 404 code (and itself ``not_found``)."""

    code_name = "not_found"


class UnknownPoint(NotFound):
    code_name = "unknown_point"


class UnknownSession(NotFound):
    code_name = "unknown_session"


class UnknownMachine(NotFound):
    code_name = "unknown_machine"


class MethodNotAllowed(_Coded):
    code_name = "method_not_allowed"


class NotAcceptable(_Coded):
    code_name = "not_acceptable"


class IdempotencyConflict(_Coded):
    code_name = "idempotency_conflict"


class SessionExists(_Coded):
    code_name = "session_exists"


class SessionRefused(_Coded):
    """Base of the refusals about a session's state; ``state`` and ``seq`` say where it is now."""


class StateMismatch(SessionRefused):
    code_name = "state_mismatch"


class SessionClosed(SessionRefused):
    code_name = "session_closed"


class NothingToResume(SessionRefused):
    code_name = "nothing_to_resume"


class SessionHandedOff(SessionRefused):
    code_name = "session_handed_off"


class IllegalTransition(SessionRefused):
    code_name = "illegal_transition"


class EventNotAllowed(SessionRefused):
    """The machine has no such event, or it cannot be sent in this state; ``allowed_events`` says which can."""

    code_name = "event_not_allowed"


class GuardFailed(SessionRefused):
    """A guard refused the move: ``guard`` (requires_fields or requires_decision) and ``reason``."""

    code_name = "guard_failed"


class InvalidFields(SessionRefused):
    """Some field values were refused (``errors`` names each); nothing was written."""

    code_name = "invalid_fields"


class FieldsMissing(SessionRefused):
    """The state requires fields the session lacks (``problem["missing"]``); nothing was written."""

    code_name = "fields_missing"


class ActionNotAllowed(SessionRefused):
    code_name = "action_not_allowed"


class LengthRequired(_Coded):
    code_name = "length_required"


class PayloadTooLarge(_Coded):
    code_name = "payload_too_large"


class UnsupportedMediaType(_Coded):
    code_name = "unsupported_media_type"


class InvalidRequest(_Coded):
    code_name = "invalid_request"


class MachineMismatch(_Coded):
    code_name = "machine_mismatch"


class InvalidCursor(_Coded):
    """A timeline's ``after`` that no page gave out: read the timeline again without it."""

    code_name = "invalid_cursor"


class RateLimited(_Coded):
    """429: ``retry_after`` holds the seconds the server asked for."""

    code_name = "rate_limited"


class Throttled(RateLimited):
    code_name = "throttled"


class ServerError(_Coded):
    code_name = "server_error"


class Unavailable(_Coded):
    """Base of the 503 codes: the server could not serve now; retried by the client."""


class EngineUnavailable(Unavailable):
    code_name = "engine_unavailable"


class SessionBusy(Unavailable):
    code_name = "session_busy"


class DatabaseUnavailable(Unavailable):
    code_name = "database_unavailable"


class SelfApprovalForbidden(PermissionDenied):
    code_name = "self_approval_forbidden"


class NotPending(_Coded):
    code_name = "not_pending"


class ChangeRequestSuperseded(_Coded):
    code_name = "change_request_superseded"


class ChangeRequestChanged(_Coded):
    code_name = "change_request_changed"


class DuplicateChangeRequest(_Coded):
    code_name = "duplicate_change_request"


class InvalidConfig(_Coded):
    code_name = "invalid_config"


class NoChanges(_Coded):
    code_name = "no_changes"


class OverrideReasonRequired(_Coded):
    code_name = "override_reason_required"


class NotInQueue(_Coded):
    code_name = "not_in_queue"


class ClaimedByOther(_Coded):
    code_name = "claimed_by_other"


class NotAwaitingApproval(_Coded):
    code_name = "not_awaiting_approval"


class ToolRefused(SessionRefused):
    """Base of the tool-call refusals (``POST /sessions/<id>/tool-calls`` and ``/tool-calls/<id>/result``);
    each carries the session object. ``retry_after_ms`` is set on the ones that say when to come back."""

    @property
    def retry_after_ms(self) -> int | None:
        value = self.problem.get("retry_after_ms")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def operation_id(self) -> str | None:
        value = self.problem.get("operation_id")
        return value if isinstance(value, str) else None


class ToolNotAllowed(ToolRefused):
    """The state's ``actions`` do not name the tool (recorded as an anomaly)."""

    code_name = "tool_not_allowed"


class UnknownTool(ToolRefused):
    """The state names the tool but the active configuration has no contract for it."""

    code_name = "unknown_tool"


class InvalidToolInput(ToolRefused):
    """The input fails the tool's ``input_schema``: ``errors`` maps each JSON pointer to its messages."""

    code_name = "invalid_tool_input"


class CircuitOpen(ToolRefused):
    """The tool's breaker is open (shared by every worker): fail fast; ``retry_after_ms`` says when a trial may pass."""

    code_name = "circuit_open"


class RetryInProgress(ToolRefused):
    """Another operation of this session in this state waits for its retry (``retry_after_ms``)."""

    code_name = "retry_in_progress"


class ToolConcurrency(ToolRefused):
    """The tool's ``max_concurrent`` calls are in flight (``retry_after_ms``)."""

    code_name = "tool_concurrency"


class AwaitingApproval(ToolRefused):
    """The call waits for a person (the server's 202); ``call_tool`` raises it once ``max_wait_s`` has
    passed without an answer: call again later with the same ``operation_id`` to go on waiting."""

    code_name = "awaiting_approval"


class ToolCallRejected(ToolRefused):
    """A person rejected the call."""

    code_name = "tool_call_rejected"


class OperationConflict(ToolRefused):
    """The operation id names another call (another session, tool or input)."""

    code_name = "operation_conflict"


class OperationFinished(ToolRefused):
    """The operation is done or gave up; ``answer`` is its last answer. A new call needs a new id."""

    code_name = "operation_finished"

    @property
    def answer(self) -> dict[str, Any]:
        value = self.problem.get("answer")
        return value if isinstance(value, dict) else {}


class RetriesExhausted(ToolRefused):
    code_name = "retries_exhausted"


class NoAttemptInFlight(ToolRefused):
    """A result for an operation with no attempt waiting for one."""

    code_name = "no_attempt_in_flight"


class UnknownOperation(NotFound):
    code_name = "unknown_operation"


def _registry() -> dict[str, type[ArbiterError]]:
    found: dict[str, type[ArbiterError]] = {}
    pending: list[type[ArbiterError]] = [_Coded]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        name = getattr(cls, "code_name", "")
        if name and cls.__dict__.get("code_name"):
            found[name] = cls
    return found


ERRORS_BY_CODE: dict[str, type[ArbiterError]] = _registry()


def error_from_problem(status: int, problem: Any, *, retry_after: float | None = None) -> ArbiterError:
    """The exception for one problem document; an unknown or missing code gives ``ArbiterError``."""
    if not isinstance(problem, dict) or not isinstance(problem.get("code"), str):
        body = problem if isinstance(problem, dict) else {"detail": str(problem)[:500]}
        return UnexpectedResponse("unexpected_response", status, body, retry_after=retry_after)
    code = problem["code"]
    cls = ERRORS_BY_CODE.get(code, ArbiterError)
    return cls(code, status, problem, retry_after=retry_after)

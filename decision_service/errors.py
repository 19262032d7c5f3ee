"""The domain error every app raises: a refusal with a stable ``code``, an HTTP status and field problems.

Codes are part of the public contract: clients branch on them, so they never change once shipped. This
module holds the base class and the codes any app may use; each app adds its own refusals in its
``errors`` module. ``decision_service.api.errors`` turns all of them into ``application/problem+json``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    NOT_AUTHENTICATED = "not_authenticated"
    PERMISSION_DENIED = "permission_denied"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    MALFORMED_JSON = "malformed_json"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    DEFERRED = "deferred"
    DATABASE_UNAVAILABLE = "database_unavailable"


class DomainError(Exception):
    """A refusal with a stable ``code``, an HTTP status and, optionally, per-field problems."""

    code: str = ErrorCode.INVALID_REQUEST.value
    status: int = 400
    title: str = "Request refused"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        status: int | None = None,
        errors: dict[str, Any] | list[Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra or {}
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.errors = errors


class InvalidRequest(DomainError):
    code: str = ErrorCode.INVALID_REQUEST.value
    status = 422
    title = "Invalid request"


class NotFound(DomainError):
    code: str = ErrorCode.NOT_FOUND.value
    status = 404
    title = "Not found"


class IdempotencyConflict(DomainError):
    code: str = ErrorCode.IDEMPOTENCY_CONFLICT.value
    status = 409
    title = "Idempotency key reused"


class PermissionDenied(DomainError):
    code: str = ErrorCode.PERMISSION_DENIED.value
    status = 403
    title = "Permission denied"


class Deferred(DomainError):
    """Not refused, not done yet: the change was recorded to be made later (for instance once someone
    approves it). Callers that show results to people say so and point at where it waits."""

    code: str = ErrorCode.DEFERRED.value
    status = 202
    title = "Deferred"


# Long enough for a restarting PostgreSQL or a failover to finish, short enough that an agent's turn
# is not given up on: a hint, not a promise.
DATABASE_RETRY_AFTER_SECONDS = 5


class DatabaseUnavailable(DomainError):
    """The database cannot be reached (down, restarting, refusing connections): nothing was done that
    needed it. An answered decision is always logged, so none was answered; retry after ``Retry-After``
    seconds, with the same ``Idempotency-Key`` when the request had one."""

    code: str = ErrorCode.DATABASE_UNAVAILABLE.value
    status = 503
    title = "Database unavailable"

    def __init__(self, detail: str = "The database cannot be reached; nothing was done. Retry shortly.") -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}

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


class DomainError(Exception):
    """A refusal with a stable ``code``, an HTTP status and, optionally, per-field problems."""

    code: str = ErrorCode.INVALID_REQUEST
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
    code = ErrorCode.INVALID_REQUEST
    status = 422
    title = "Invalid request"


class NotFound(DomainError):
    code = ErrorCode.NOT_FOUND
    status = 404
    title = "Not found"


class IdempotencyConflict(DomainError):
    code = ErrorCode.IDEMPOTENCY_CONFLICT
    status = 409
    title = "Idempotency key reused"

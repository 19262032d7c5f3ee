"""Stable, machine-readable error codes for everything the domain can refuse.

Codes are part of the public contract: clients branch on them, so they never change once shipped.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_CONFIG = "invalid_config"
    INVALID_REQUEST = "invalid_request"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    NOT_AUTHENTICATED = "not_authenticated"
    UNKNOWN_POINT = "unknown_point"
    POINT_NOT_ALLOWED = "point_not_allowed"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    MALFORMED_JSON = "malformed_json"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    ENGINE_UNAVAILABLE = "engine_unavailable"


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


class ConfigError(DomainError):
    """A configuration document or record that cannot be applied; ``problems`` name each place."""

    code = ErrorCode.INVALID_CONFIG
    status = 422
    title = "Invalid configuration"

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems), errors=problems)


class UnknownPoint(DomainError):
    code = ErrorCode.UNKNOWN_POINT
    status = 404
    title = "Unknown decision point"


class PointNotAllowed(DomainError):
    code = ErrorCode.POINT_NOT_ALLOWED
    status = 403
    title = "Decision point not allowed"


class IdempotencyConflict(DomainError):
    code = ErrorCode.IDEMPOTENCY_CONFLICT
    status = 409
    title = "Idempotency key reused"


class InvalidRequest(DomainError):
    code = ErrorCode.INVALID_REQUEST
    status = 422
    title = "Invalid request"


class NotFound(DomainError):
    code = ErrorCode.NOT_FOUND
    status = 404
    title = "Not found"


class EngineUnavailable(DomainError):
    """The configuration cannot be evaluated by the configured backend (e.g. beyond durable-rules' limits)."""

    code = ErrorCode.ENGINE_UNAVAILABLE
    status = 503
    title = "Engine unavailable"

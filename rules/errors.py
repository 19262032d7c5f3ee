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
    ) -> None:
        super().__init__(detail)
        self.detail = detail
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

"""Refusals of the configuration and decision services, each with a stable code.

The base class and the codes every app shares live in ``decision_service.errors``; they are re-exported
here so that code about rules has one place to import its errors from.
"""

from __future__ import annotations

from enum import StrEnum

from decision_service.errors import DomainError, IdempotencyConflict, InvalidRequest, NotFound


class RulesErrorCode(StrEnum):
    INVALID_CONFIG = "invalid_config"
    UNKNOWN_POINT = "unknown_point"
    POINT_NOT_ALLOWED = "point_not_allowed"
    ENGINE_UNAVAILABLE = "engine_unavailable"


class ConfigError(DomainError):
    """A configuration document or record that cannot be applied; ``problems`` name each place."""

    code = RulesErrorCode.INVALID_CONFIG
    status = 422
    title = "Invalid configuration"

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems), errors=problems)


class UnknownPoint(DomainError):
    code = RulesErrorCode.UNKNOWN_POINT
    status = 404
    title = "Unknown decision point"


class PointNotAllowed(DomainError):
    code = RulesErrorCode.POINT_NOT_ALLOWED
    status = 403
    title = "Decision point not allowed"


class EngineUnavailable(DomainError):
    """The configuration cannot be evaluated by the configured backend (e.g. beyond durable-rules' limits)."""

    code = RulesErrorCode.ENGINE_UNAVAILABLE
    status = 503
    title = "Engine unavailable"


__all__ = [
    "ConfigError",
    "DomainError",
    "EngineUnavailable",
    "IdempotencyConflict",
    "InvalidRequest",
    "NotFound",
    "PointNotAllowed",
    "RulesErrorCode",
    "UnknownPoint",
]

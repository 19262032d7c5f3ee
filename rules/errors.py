"""Refusals of the configuration and decision services, each with a stable code.

The base class and the codes every app shares live in ``decision_service.errors``; they are re-exported
here so that code about rules has one place to import its errors from.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from decision_service.errors import (
    Deferred,
    DomainError,
    IdempotencyConflict,
    InvalidRequest,
    NotFound,
    PermissionDenied,
)

if TYPE_CHECKING:
    # The model's own module (it imports nothing of rules), not rules.models: modules that rules.models
    # gathers import this one, so that would close an import circle, even one of annotations (issue 22).
    from rules.governance.models.change_requests import ChangeRequest


class RulesErrorCode(StrEnum):
    INVALID_CONFIG = "invalid_config"
    UNKNOWN_POINT = "unknown_point"
    UNKNOWN_MACHINE = "unknown_machine"
    POINT_NOT_ALLOWED = "point_not_allowed"
    ENGINE_UNAVAILABLE = "engine_unavailable"
    APPROVAL_REQUIRED = "approval_required"
    SELF_APPROVAL_FORBIDDEN = "self_approval_forbidden"
    NOT_PENDING = "not_pending"
    CHANGE_REQUEST_SUPERSEDED = "change_request_superseded"
    NO_CHANGES = "no_changes"
    OVERRIDE_REASON_REQUIRED = "override_reason_required"
    CHANGE_REQUEST_CHANGED = "change_request_changed"
    DUPLICATE_CHANGE_REQUEST = "duplicate_change_request"


class ConfigError(DomainError):
    """A configuration document or record that cannot be applied; ``problems`` name each place."""

    code: str = RulesErrorCode.INVALID_CONFIG.value
    status = 422
    title = "Invalid configuration"

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        # As field problems, like every other refusal: the problems are the configuration document's.
        super().__init__("; ".join(problems), errors={"config": problems})


class UnknownPoint(DomainError):
    code: str = RulesErrorCode.UNKNOWN_POINT.value
    status = 404
    title = "Unknown decision point"


class UnknownMachine(DomainError):
    code: str = RulesErrorCode.UNKNOWN_MACHINE.value
    status = 404
    title = "Unknown state machine"


class PointNotAllowed(DomainError):
    code: str = RulesErrorCode.POINT_NOT_ALLOWED.value
    status = 403
    title = "Decision point not allowed"


class EngineUnavailable(DomainError):
    """The configuration cannot be evaluated by the configured backend (e.g. beyond durable-rules' limits)."""

    code: str = RulesErrorCode.ENGINE_UNAVAILABLE.value
    status = 503
    title = "Engine unavailable"


class ApprovalRequired(Deferred):
    """A high-risk change was held back: it waits in ``change_request`` for approval."""

    code: str = RulesErrorCode.APPROVAL_REQUIRED.value
    title = "Approval required"

    def __init__(self, change_request: ChangeRequest) -> None:
        self.change_request = change_request
        super().__init__(
            f"The change needs a second person's approval: change request {change_request.pk} is pending.",
            extra={"change_request": change_request.pk},
        )


class SelfApprovalForbidden(DomainError):
    code: str = RulesErrorCode.SELF_APPROVAL_FORBIDDEN.value
    status = 403
    title = "Self-approval forbidden"


class NotPending(DomainError):
    code: str = RulesErrorCode.NOT_PENDING.value
    status = 409
    title = "Change request not pending"


class ChangeRequestSuperseded(DomainError):
    code: str = RulesErrorCode.CHANGE_REQUEST_SUPERSEDED.value
    status = 409
    title = "Change request superseded"


class ChangeRequestChanged(DomainError):
    """The approval names a digest that is not the request's current one: it was edited after the
    approver read it. The refusal carries the current ``digest`` and ``diff`` to review again."""

    code: str = RulesErrorCode.CHANGE_REQUEST_CHANGED.value
    status = 409
    title = "Change request changed"


class DuplicateChangeRequest(Deferred):
    """The same change already waits in an open request (``change_request`` names it): nothing new is
    filed. A deferral, not a plain refusal: the change is on record, to be made once that one is approved;
    but a 409, since the caller's request itself was not taken."""

    code: str = RulesErrorCode.DUPLICATE_CHANGE_REQUEST.value
    status = 409
    title = "Duplicate change request"

    def __init__(self, open_request: ChangeRequest) -> None:
        self.change_request = open_request
        super().__init__(
            f"Change request {open_request.pk} ({open_request.state}) already proposes exactly this change; "
            "nothing new was filed.",
            extra={"change_request": open_request.pk},
        )


class NoChanges(DomainError):
    code: str = RulesErrorCode.NO_CHANGES.value
    status = 422
    title = "No changes"


class OverrideReasonRequired(DomainError):
    """Approving a request that breaks pinned regression cases needs an explicit override reason."""

    code: str = RulesErrorCode.OVERRIDE_REASON_REQUIRED.value
    status = 422
    title = "Override reason required"


__all__ = [
    "ApprovalRequired",
    "ChangeRequestChanged",
    "ChangeRequestSuperseded",
    "ConfigError",
    "Deferred",
    "DomainError",
    "DuplicateChangeRequest",
    "EngineUnavailable",
    "IdempotencyConflict",
    "InvalidRequest",
    "NoChanges",
    "NotFound",
    "NotPending",
    "OverrideReasonRequired",
    "PermissionDenied",
    "PointNotAllowed",
    "RulesErrorCode",
    "SelfApprovalForbidden",
    "UnknownPoint",
]

"""Refusals of the session API, each with a stable code."""

from __future__ import annotations

from decision_service.errors import DomainError

# Machines are configuration (rules); the session API raises the same refusal for an unknown one.
from rules.errors import UnknownMachine as UnknownMachine


class UnknownSession(DomainError):
    code = "unknown_session"
    status = 404
    title = "Unknown session"


class SessionExists(DomainError):
    code = "session_exists"
    status = 409
    title = "Session already exists"


class StateMismatch(DomainError):
    code = "state_mismatch"
    status = 409
    title = "The session is not in the expected state"


class SessionClosed(DomainError):
    code = "session_closed"
    status = 409
    title = "The session has ended"


class SessionBusy(DomainError):
    """SQLite only: other writers held its database lock for the whole busy timeout."""

    code = "session_busy"
    status = 503
    title = "The session is busy"


class NothingToResume(DomainError):
    code = "nothing_to_resume"
    status = 409
    title = "No interrupted state to resume"


class IllegalTransition(DomainError):
    code = "illegal_transition"
    status = 422
    title = "Transition not allowed"


class ActionNotAllowed(DomainError):
    code = "action_not_allowed"
    status = 422
    title = "Action not allowed in this state"


class EventNotAllowed(DomainError):
    code = "event_not_allowed"
    status = 422
    title = "Event not allowed in this state"


class GuardFailed(DomainError):
    code = "guard_failed"
    status = 422
    title = "The move's guard is not satisfied"


class MachineMismatch(DomainError):
    code = "machine_mismatch"
    status = 422
    title = "The decision point moves sessions of another machine"


class NotInQueue(DomainError):
    code = "not_in_queue"
    status = 409
    title = "The session is not waiting for a person"


class ClaimedByOther(DomainError):
    code = "claimed_by_other"
    status = 409
    title = "Another person has this session"


class RateLimited(DomainError):
    """The agent sent more requests than its rate limit allows (agents.runtimes.ratelimit)."""

    code = "rate_limited"
    status = 429
    title = "Too many requests"

    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(retry_after)}


class SessionHandedOff(DomainError):
    """The session waits in its machine's handoff state: only a person (the human queue) moves it now."""

    code = "session_handed_off"
    status = 409
    title = "The session is waiting for a person"


class InvalidCursor(DomainError):
    """A timeline's or changes' ``after`` that is not a sequence id (the opaque cursors of the timeline's
    earlier form included)."""

    code = "invalid_cursor"
    status = 422
    title = "Invalid cursor"


class InvalidFields(DomainError):
    """Session field updates that are not values of their declared fields (``errors``: field → messages)."""

    code = "invalid_fields"
    status = 422
    title = "Invalid session field values"


class FieldsMissing(DomainError):
    """A move into a state whose required fields (``required_in``) the session lacks (``missing``)."""

    code = "fields_missing"
    status = 422
    title = "Required session fields are missing"

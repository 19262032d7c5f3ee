"""A failed attempt's error policy: what the contract says about its code, and how long to wait before the
next attempt. Pure: no Django, no clock, no randomness of its own (the caller passes the random draw).

The fields mean what ``rules.config.tool_definitions`` says (Temporal's retry policy): ``max_retries`` counts
the retries after the first attempt, so an operation may have ``1 + max_retries`` attempts; an exponential
backoff waits ``base_ms · 2^(n-1)`` before retry ``n``, capped at ``cap_ms``; a fixed one waits ``base_ms``
(capped too); ``jitter`` takes up to that fraction of the wait off at random.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rules.config.tool_definitions import DEFAULT_BACKOFF, DEFAULT_MAX_RETRIES

OUTPUT_INVALID = "output_invalid"  # the code of a failure whose output does not match the output schema
RETRY, GIVE_UP, DONE = "retry", "give_up", "done"


@dataclass(frozen=True, slots=True)
class Policy:
    """How a failure with one code is handled: ``declared`` says whether the contract names the code."""

    code: str
    declared: bool
    retryable: bool
    max_retries: int
    backoff: Mapping[str, Any]


def policy_for(error_codes: Mapping[str, Mapping[str, Any]], code: str) -> Policy:
    """The contract's policy for ``code``. An undeclared code is not retryable; so is ``output_invalid``
    unless the contract declares it like any other code."""
    entry = error_codes.get(code)
    if entry is None:
        return Policy(code=code, declared=False, retryable=False, max_retries=0, backoff=DEFAULT_BACKOFF)
    retryable = bool(entry.get("retryable", False))
    retries = int(entry.get("max_retries", DEFAULT_MAX_RETRIES)) if retryable else 0
    return Policy(
        code=code,
        declared=True,
        retryable=retryable,
        max_retries=retries,
        backoff={**DEFAULT_BACKOFF, **(entry.get("backoff") or {})},
    )


def backoff_ms(backoff: Mapping[str, Any], retry: int, draw: float) -> int:
    """The wait before retry number ``retry`` (1 for the first retry), in whole milliseconds.

    ``draw`` is a random number in [0, 1): jitter takes ``jitter · draw`` of the wait off. The wait is
    never more than ``cap_ms``, never less than ``(1 - jitter) · min(base_ms, cap_ms)``, and never negative.
    """
    if retry < 1:
        raise ValueError("retries are numbered from 1")
    base = int(backoff.get("base_ms", DEFAULT_BACKOFF["base_ms"]))
    cap = int(backoff.get("cap_ms", DEFAULT_BACKOFF["cap_ms"]))
    jitter = float(backoff.get("jitter", 0) or 0)
    if backoff.get("kind", DEFAULT_BACKOFF["kind"]) == "exponential":
        # 2^(retry-1) grows past any cap quickly: stop doubling once the cap is reached (no huge integers).
        wait = base
        for _ in range(retry - 1):
            if wait >= cap:
                break
            wait *= 2
    else:
        wait = base
    wait = min(wait, cap)
    return max(0, round(wait * (1 - jitter * min(max(draw, 0.0), 1.0))))


@dataclass(frozen=True, slots=True)
class Next:
    """What follows a failed attempt: ``retry`` after ``retry_after_ms``, or ``give_up``."""

    next: str
    retry_after_ms: int | None = None


def after_failure(policy: Policy, attempt: int, draw: float) -> Next:
    """After attempt number ``attempt`` (1 for the first) failed under ``policy``."""
    retries_so_far = attempt - 1
    if not policy.retryable or retries_so_far >= policy.max_retries:
        return Next(GIVE_UP)
    return Next(RETRY, backoff_ms(policy.backoff, retries_so_far + 1, draw))


def attempts_allowed(policy: Policy) -> int:
    """How many attempts an operation whose last failure had this policy may have in all."""
    return 1 + policy.max_retries

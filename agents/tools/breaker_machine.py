"""The breaker's state machine and the concurrency limit as pure steps on one tool's state.

The database store (``agents.tools.breaker_db``) runs these steps on its locked row; the Redis store
(``agents.tools.breaker_redis``) runs the same steps written in Lua. The meanings are resilience4j's
time-based breaker with a failure count (``rules.config.tool_definitions``):

- closed: each failed attempt is kept with its time; ``failure_threshold`` of them within the last
  ``window_s`` open the breaker. Successes change nothing (a count, not a rate).
- open: every call is refused (``circuit_open``) until ``half_open_after_ms`` have passed since it
  opened; the first call after that finds it half-open. Results of attempts started before it opened
  change nothing.
- half_open: ``trial_calls`` calls are let through as trials, the others refused. A trial's failure opens
  the breaker again; once ``trial_calls`` successes are in, it closes. Trials that all went past their
  deadline without a result count as a failure (else the breaker would wait for them for ever).
- ignored: a failed attempt with one of the contract's ``ignore_codes`` (resilience4j's ``ignoreExceptions``)
  is no result at all for the breaker: not a failure, not a success (the caller does not record it). A
  half-open trial that ends so gives its trial slot back (``ok=None``; resilience4j releases the permission
  too), so another call may try; the breaker stays half-open. The slot is given back at most up to
  ``trial_calls`` less the successes already in, so a stray result cannot let more trials through than
  that at once — but a trial of an earlier half-open spell, ignored late, does free one of this spell's.
- forced: a person opened it; it refuses every call and ignores results until a person closes it.

The concurrency limit: each attempt let through holds a lease until ``gate_leave`` or its deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
STATES = (CLOSED, HALF_OPEN, OPEN)
CIRCUIT_OPEN, TOOL_CONCURRENCY = "circuit_open", "tool_concurrency"
# What a refusal of a breaker opened by hand tells the agent to wait: no time closes it, so a hint.
FORCED_RETRY_MS = 30_000


@dataclass(frozen=True, slots=True)
class Breaker:
    threshold: int
    window_ms: int
    half_open_ms: int
    trials: int

    @classmethod
    def of(cls, contract: Mapping[str, Any] | None) -> Breaker | None:
        """The contract's ``circuit_breaker`` mapping (canonical: every key present), or None."""
        if contract is None:
            return None
        return cls(
            threshold=max(1, int(contract["failure_threshold"])),
            window_ms=max(1, int(contract["window_s"])) * 1000,
            half_open_ms=max(0, int(contract["half_open_after_ms"])),
            trials=max(1, int(contract["trial_calls"])),
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one step did: the state before and after, and a refusal (``""`` when let through)."""

    before: str
    after: str
    refused: str = ""
    retry_after_ms: int = 0


@dataclass(slots=True)
class State:
    """One tool's state. ``opened_at_ms`` is when it opened (open), or the latest deadline of a trial let
    through (half-open). ``marks`` are failure times (closed) or trial successes (half-open)."""

    state: str = CLOSED
    opened_at_ms: int = 0
    trials_left: int = 0
    marks: list[int] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    forced: bool = False


def _open(s: State, now: int) -> None:
    s.state, s.opened_at_ms, s.trials_left, s.marks = OPEN, now, 0, []


def _close(s: State) -> None:
    s.state, s.opened_at_ms, s.trials_left, s.marks, s.forced = CLOSED, 0, 0, [], False


def advance(s: State, b: Breaker | None, now: int) -> None:
    """Open → half-open once its time has come (nobody watches the clock: the next step does this)."""
    if b is not None and s.state == OPEN and not s.forced and now >= s.opened_at_ms + b.half_open_ms:
        s.state, s.opened_at_ms, s.trials_left, s.marks = HALF_OPEN, 0, b.trials, []


def enter(
    s: State, b: Breaker | None, *, max_concurrent: int | None, lease: str, deadline_ms: int, now: int
) -> Outcome:
    before = s.state
    if s.forced:
        return Outcome(before, s.state, CIRCUIT_OPEN, b.half_open_ms if b and b.half_open_ms else FORCED_RETRY_MS)
    trial = False
    if b is not None:
        advance(s, b, now)
        if s.state == OPEN:
            return Outcome(before, s.state, CIRCUIT_OPEN, max(1, s.opened_at_ms + b.half_open_ms - now))
        if s.state == HALF_OPEN:
            if s.trials_left <= 0:
                if s.opened_at_ms and now > s.opened_at_ms:
                    _open(s, now)
                    return Outcome(before, s.state, CIRCUIT_OPEN, max(1, b.half_open_ms))
                wait = s.opened_at_ms - now if s.opened_at_ms else b.half_open_ms
                return Outcome(before, s.state, CIRCUIT_OPEN, max(1, wait))
            trial = True
    if max_concurrent is not None:
        s.in_flight = {k: v for k, v in s.in_flight.items() if v > now}
        if lease not in s.in_flight and len(s.in_flight) >= max_concurrent:
            return Outcome(before, s.state, TOOL_CONCURRENCY, max(1, min(s.in_flight.values()) - now))
        s.in_flight[lease] = deadline_ms
    if trial:
        s.trials_left -= 1
        s.opened_at_ms = max(s.opened_at_ms, deadline_ms)
    return Outcome(before, s.state)


def leave(s: State, *, lease: str) -> bool:
    """Free the lease's slot; whether there was one."""
    return s.in_flight.pop(lease, None) is not None


def record(s: State, b: Breaker | None, *, ok: bool | None, now: int) -> Outcome:
    """A result: ``ok`` True (success), False (failure) or None (an ignored trial: its slot given back)."""
    before = s.state
    if b is None or s.forced:
        return Outcome(before, s.state)
    advance(s, b, now)
    if ok is None:
        if s.state == HALF_OPEN:
            s.trials_left = min(b.trials - len(s.marks), s.trials_left + 1)
        return Outcome(before, s.state)
    if s.state == CLOSED and not ok:
        s.marks = [t for t in s.marks if t > now - b.window_ms] + [now]
        if len(s.marks) >= b.threshold:
            _open(s, now)
    elif s.state == HALF_OPEN:
        if not ok:
            _open(s, now)
        else:
            s.marks = [*s.marks, now]
            if len(s.marks) >= b.trials:
                _close(s)
    return Outcome(before, s.state)


def force(s: State, *, opened: bool, now: int) -> Outcome:
    """A person's change: open (stays open) or close (failures forgotten)."""
    before = s.state
    if opened:
        _open(s, now)
        s.forced = True
    else:
        _close(s)
    return Outcome(before, s.state)


def failures_in_window(s: State, b: Breaker | None, now: int) -> int:
    if b is None or s.state != CLOSED:
        return 0
    return sum(1 for t in s.marks if t > now - b.window_ms)


def leases_alive(s: State, now: int) -> int:
    return sum(1 for v in s.in_flight.values() if v > now)

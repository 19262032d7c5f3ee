"""Where each tool's breaker and leases live: Redis when one is configured, the database otherwise.

Both stores answer the same five operations (``Store``), each atomic across every process: the database
store by the tool's ``ToolBreaker`` row, taken with ``SELECT … FOR UPDATE`` (on SQLite, whose
transactions here begin IMMEDIATE, by the database's write lock); the Redis store by one Lua script per
operation, timed by Redis's own clock. "Configured" is decided as the rate limiter decides it
(``agents.runtimes.ratelimit.buckets``; here ``breaker_backend.store``): a Redis broker URL, and tasks
not run eagerly. When that Redis cannot be reached, the database store answers instead — never a
per-process state, which would let each process run its own breaker — and the process tries Redis again
a few seconds later.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.db import transaction

from agents.tools import breaker_machine as machine
from agents.tools.breaker_machine import Breaker, Outcome, State
from agents.tools.models import ToolBreaker


def wall_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A tool's breaker as the admin and the staff API show it (read, not changed)."""

    tool: str
    state: str
    forced: bool
    failures: int  # in the window (closed)
    in_flight: int  # leases not yet past their deadline
    opened_at_ms: int | None  # when it opened (open only)
    retry_after_ms: int | None  # open: until it lets a trial through (None when forced)


class Store(Protocol):
    name: str

    def enter(
        self, tool: str, *, breaker: Breaker | None, max_concurrent: int | None, lease: str, deadline_ms: int
    ) -> Outcome: ...

    def leave(self, tool: str, *, lease: str) -> None: ...

    def record(self, tool: str, *, breaker: Breaker | None, ok: bool | None) -> Outcome: ...

    def snapshot(self, tool: str, *, breaker: Breaker | None) -> Snapshot: ...

    def force(self, tool: str, *, opened: bool) -> Outcome: ...


def snapshot_of(tool: str, s: State, b: Breaker | None, now: int) -> Snapshot:
    machine.advance(s, b, now)  # on a copy: a read changes nothing
    opened = s.state == machine.OPEN
    retry = max(1, s.opened_at_ms + b.half_open_ms - now) if opened and b is not None and not s.forced else None
    return Snapshot(
        tool=tool,
        state=s.state,
        forced=s.forced,
        failures=machine.failures_in_window(s, b, now),
        in_flight=machine.leases_alive(s, now),
        opened_at_ms=s.opened_at_ms if opened else None,
        retry_after_ms=retry,
    )


class DatabaseStore:
    """The ``ToolBreaker`` row per tool. Each operation locks it in a transaction of its own, or inside
    the caller's (the tool-call check), which then holds the lock until it commits."""

    name = "database"

    def __init__(self, clock: Callable[[], int] = wall_ms) -> None:
        self._clock = clock

    @staticmethod
    def _locked(tool: str) -> ToolBreaker:
        # get_or_create under select_for_update: two first calls racing both insert; the loser's
        # IntegrityError is caught inside get_or_create's savepoint and it reads (and locks) the winner's.
        row, _ = ToolBreaker.objects.select_for_update().get_or_create(tool=tool)
        return row

    @staticmethod
    def _state(row: ToolBreaker) -> State:
        return State(
            state=row.state,
            opened_at_ms=row.opened_at_ms or 0,
            trials_left=row.trials_left,
            marks=[int(t) for t in row.failures or []],
            in_flight={str(k): int(v) for k, v in (row.in_flight or {}).items()},
            forced=row.forced,
        )

    @staticmethod
    def _save(row: ToolBreaker, s: State) -> None:
        fields = {
            "state": s.state,
            "opened_at_ms": s.opened_at_ms or None,
            "trials_left": s.trials_left,
            "failures": s.marks,
            "in_flight": s.in_flight,
            "forced": s.forced,
        }
        changed = [name for name, value in fields.items() if getattr(row, name) != value]
        if changed:
            for name in changed:
                setattr(row, name, fields[name])
            row.save(update_fields=[*changed, "updated_at"])

    def enter(
        self, tool: str, *, breaker: Breaker | None, max_concurrent: int | None, lease: str, deadline_ms: int
    ) -> Outcome:
        with transaction.atomic():
            row = self._locked(tool)
            s = self._state(row)
            outcome = machine.enter(
                s, breaker, max_concurrent=max_concurrent, lease=lease, deadline_ms=deadline_ms, now=self._clock()
            )
            self._save(row, s)
        return outcome

    def leave(self, tool: str, *, lease: str) -> None:
        with transaction.atomic():
            row = ToolBreaker.objects.select_for_update().filter(tool=tool).first()
            if row is None:
                return
            s = self._state(row)
            if machine.leave(s, lease=lease):
                self._save(row, s)

    def record(self, tool: str, *, breaker: Breaker | None, ok: bool | None) -> Outcome:
        with transaction.atomic():
            row = self._locked(tool)
            s = self._state(row)
            outcome = machine.record(s, breaker, ok=ok, now=self._clock())
            self._save(row, s)
        return outcome

    def snapshot(self, tool: str, *, breaker: Breaker | None) -> Snapshot:
        row = ToolBreaker.objects.filter(tool=tool).first()
        s = self._state(row) if row is not None else State()
        return snapshot_of(tool, s, breaker, self._clock())

    def force(self, tool: str, *, opened: bool) -> Outcome:
        with transaction.atomic():
            row = self._locked(tool)
            s = self._state(row)
            outcome = machine.force(s, opened=opened, now=self._clock())
            self._save(row, s)
        return outcome

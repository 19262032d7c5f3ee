"""Waiting for a session's next event (``GET …/changes``, a long poll), without a connection per waiter.

A waiting request gives back its database connection and sleeps on an event. One watcher thread per
process (started when the first request waits, gone when none does) looks for them all:

- every ``TICK`` it reads the service-wide sequence's last number (one statement for the whole process:
  ``decision_service.sequence``); while it has not moved, nothing new was written anywhere, for anyone;
- when it moved past what a waiter last looked at, that waiter's session is asked whether any timeline
  stream has an event after its ``after`` (``session_has_events_after``: one statement), at most once per
  the waiter's own interval, which starts at ``TICK`` and grows to ``SLOWEST`` the longer it waits — a busy
  service with many waiters costs at most one statement per waiter per ``SLOWEST``; while the number has
  not moved since a waiter's last ask, it is asked again only every ``QUIET`` (a number handed out before
  that ask may have committed since).

So the decide path writes nothing more (no NOTIFY, no publish): the watcher reads what the writers wrote
anyway, and a runtime learns of a change within ``SLOWEST`` seconds (within ``TICK`` of a change early in
its wait). Works the same on SQLite and PostgreSQL, with or without Redis. A number taken but not yet
committed is not seen until its commit, and for one session numbers commit in order
(``agents.sessions.timeline``), so nothing is passed over.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.db import DatabaseError, close_old_connections, connection

from agents.sessions.models import Session
from agents.sessions.timeline import session_has_events_after
from decision_service.sequence import COUNTER_TABLE, SEQUENCE

logger = logging.getLogger(__name__)

TICK = 0.1  # seconds between two looks at the sequence's last number
SLOWEST = 1.0  # seconds: a waiter's session asked at most this seldom once it has waited a while
GROWTH = 1.5
QUIET = 5.0  # seconds: asked again this seldom while the sequence has not moved since the last ask


def sequence_last() -> int:
    """The last number the service-wide sequence handed out (committed or not; 0 before the first)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {SEQUENCE}")  # noqa: S608 (a constant)
        else:
            cursor.execute(f"SELECT value FROM {COUNTER_TABLE}")  # noqa: S608 (a constant)
        row = cursor.fetchone()
    return int(row[0]) if row else 0


@dataclass(eq=False)
class _Waiter:
    session: Session
    after: int
    woken: threading.Event = field(default_factory=threading.Event)
    seen: int = -1  # the sequence's last number when this waiter's session was last asked
    interval: float = TICK
    due: float = 0.0


class ChangeWatch:
    """The process's waiters and the one thread that looks for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[_Waiter] = set()
        self._thread: threading.Thread | None = None

    def wait(self, session: Session, *, after: int, seconds: float) -> bool:
        """Blocks up to ``seconds`` until the session has an event after ``after``; whether it has. The
        caller's database connection is closed first: a sleeping request holds none."""
        if seconds <= 0:
            return False
        if not connection.in_atomic_block:
            connection.close()
        waiter = _Waiter(session, after, due=time.monotonic())
        with self._lock:
            self._waiters.add(waiter)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="arbiter-changes", daemon=True)
                self._thread.start()
        try:
            return waiter.woken.wait(seconds)
        finally:
            with self._lock:
                self._waiters.discard(waiter)

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    waiters = list(self._waiters)
                    if not waiters:
                        self._thread = None
                        return
                self._look(waiters)
                time.sleep(TICK)
        finally:
            connection.close()

    def _look(self, waiters: list[_Waiter]) -> None:
        close_old_connections()
        try:
            last = sequence_last()
        except DatabaseError:  # the database away: the waiters time out and answer as usual
            logger.warning("changes: the sequence could not be read", exc_info=True)
            connection.close()
            return
        now = time.monotonic()
        for waiter in waiters:
            if waiter.woken.is_set() or last <= waiter.after or now < waiter.due:
                continue
            # Unmoved since the last ask: only a number taken before it and committed since can be new.
            interval = QUIET if last == waiter.seen else waiter.interval
            waiter.seen = last
            waiter.interval = min(waiter.interval * GROWTH, SLOWEST)
            waiter.due = now + interval
            try:
                if session_has_events_after(waiter.session, after=waiter.after):
                    waiter.woken.set()
            except DatabaseError:
                logger.warning("changes: a waiting session could not be read", exc_info=True)
                connection.close()
                return


changes_watch = ChangeWatch()


def connection_release_when_done() -> None:
    """After a wait, the answer's reads opened a connection again: closed when the request ends (Django's
    ``close_old_connections`` at ``request_finished``), not kept by a thread that mostly sleeps. Called
    after those reads (a new connection sets its own closing time)."""
    if connection.connection is not None:
        connection.close_at = time.monotonic()

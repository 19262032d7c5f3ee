"""One ordered story per session: every event Arbiter records about it, in the service-wide order.

Each kind of event is a *stream* (moves, decisions, anomalies here; queue events in ``agents.queue``,
tool-call attempts in ``agents.tools``, anything a room above adds) registered by name from
``AgentsConfig.ready()`` with ``timeline_stream_register``. A stream answers ``(session, after, limit)``
with at most ``limit`` of its events whose ``sequence_id`` is greater than ``after``, ascending — one
``sequence_id > after ORDER BY sequence_id LIMIT n`` on its index. ``session_events`` merges them: the
first ``limit`` events of the session after ``after``, whichever streams they come from. Sessions import
no room above them; the rooms above register here (a hook, as Django's contrib apps do).

Order and visibility (``decision_service.sequence``): a number is handed out when its row is written and
becomes visible when its transaction commits. Every write that changes a session (a move, a field
update, a handoff, a claim or release, an approval, a tool call's check and result, a decide that moves
or records an anomaly) takes the session's row lock before it writes, so for one session numbers commit
in order: a reader who saw N will not later see a smaller number for that session, and ``after=N`` never
misses one. The one exception is a decide that neither moves the session nor finds anything wrong with
the model's answer: its log row is a single INSERT in autocommit, without the lock; were another writer of
the same session to commit a larger number within that one statement's time, a reader in that instant
could pass the decision's number before it appeared. A runtime decides one turn at a time, so its own
decisions do not race its own moves; an operator's claim at that very instant could.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, Q, QuerySet

from agents.sessions.models import Session
from rules.config.runtime import engines
from rules.engine.compiler import CompileError
from rules.engine.masking import Masker
from rules.errors import EngineUnavailable


@dataclass(frozen=True)
class TimelineEvent:
    """One event of a session's story. ``data``: the type's own fields, JSON-ready and already masked
    (what the timeline and changes answers show besides ``sequence_id``, ``type`` and ``at``)."""

    sequence_id: int
    at: dt.datetime
    type: str
    data: dict[str, Any]


Stream = Callable[[Session, int, int], list[TimelineEvent]]
"""``(session, after, limit)`` → the stream's events with ``sequence_id > after``, ascending, at most ``limit``."""

Newer = Callable[[Session, int], QuerySet[Any]]
"""``(session, after)`` → a queryset that has a row exactly when the stream has an event after ``after``:
lets a waiting ``changes`` request ask every stream at once, in one statement."""


@dataclass(frozen=True)
class _Registered:
    stream: Stream
    newer: Newer | None


_STREAMS: dict[str, _Registered] = {}


def timeline_stream_register(name: str, stream: Stream, *, newer: Newer | None = None) -> None:
    """Adds (or, under the same ``name``, replaces) a stream of the sessions' timeline. ``newer``, when
    given, is asked instead of the stream while a ``changes`` request waits (cheaper: an EXISTS, not the
    rows); without it the stream itself is read with ``limit=1``."""
    _STREAMS[name] = _Registered(stream, newer)


def timeline_streams() -> list[str]:
    """The names of the streams registered, in registration order."""
    return list(_STREAMS)


def session_events(session: Session, *, after: int = 0, limit: int) -> list[TimelineEvent]:
    """The session's first ``limit`` events after sequence id ``after``, in sequence order, every stream's
    together. An event among the first ``limit`` of the merge is among the first ``limit`` of its stream."""
    streams = [registered.stream(session, after, limit) for registered in _STREAMS.values()]
    return list(heapq.merge(*streams, key=lambda e: e.sequence_id))[:limit]


def session_has_events_after(session: Session, *, after: int) -> bool:
    """Whether any stream has an event of the session after ``after``: one statement for the streams that
    registered a ``newer`` query, and a one-row read of each other stream."""
    probes = [r.newer(session, after) for r in _STREAMS.values() if r.newer is not None]
    if probes:
        condition = Q()
        for probe in probes:
            condition |= Q(Exists(probe))
        if Session.objects.filter(pk=session.pk).filter(condition).exists():
            return True
    return any(r.stream(session, after, 1) for r in _STREAMS.values() if r.newer is None)


_BUILTIN = Masker()


class TimelineMasking:
    """Masks free text as the decision log of ``point`` would (the built-in patterns where there is no such
    point): the text kept with a session as sent — a move's reason, an anomaly's detail and raw output, an
    operator's note — before a stream shows it."""

    def __init__(self) -> None:
        try:
            self._config = engines.current()
        except CompileError as exc:
            raise EngineUnavailable(str(exc)) from exc

    def __call__(self, text: str, point: str = "") -> str:
        if not text:
            return text
        compiled = self._config.point(point) if point else None
        return (compiled.masker if compiled is not None else _BUILTIN).mask(text).text

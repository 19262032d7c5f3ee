"""Compiled engines for this process: one per configuration revision, compiled once, shared by requests.

Each request asks for the current engine. At most every ``ARBITER_REVISION_CHECK_SECONDS`` that costs
one indexed query for the newest revision's number and digest; a new revision is compiled on first use,
so a change reaches every worker process within a second without a restart. Compiled configurations
are keyed by digest as well as number, so a restored or re-created database can never be served a
stale engine that happens to share a revision number.

The same query carries the stamps other per-process caches watch (``EngineCache.watch``): the agents
app's cache of authenticated agent tokens is dropped when its stamp moves, so a rotated or revoked
token, a deactivated agent or a change of its points is seen within the same interval, with no query
of its own.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Expression

from decision_service import metrics
from rules.engine import CompiledConfig, compile_config
from rules.models import ConfigRevision

_EMPTY_SNAPSHOT: dict[str, object] = {"version": 1, "thresholds": [], "keyword_lists": [], "points": []}
_KEEP = 8  # recent revisions kept compiled, for replays of recent decisions


@dataclass
class _Watch:
    """A value read with every revision check; ``changed`` is called when it differs from the last one."""

    expression: Callable[[], Expression]
    changed: Callable[[], None]
    seen: Any = None


class EngineCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compiled: OrderedDict[tuple[int, str], CompiledConfig] = OrderedDict()
        self._current: tuple[int, str] | None = None
        self._checked_at = float("-inf")
        self._watches: dict[str, _Watch] = {}

    def clear(self) -> None:
        with self._lock:
            self._compiled.clear()
            self._current = None
            self._checked_at = float("-inf")
            watches = list(self._watches.values())
        for watch in watches:
            watch.seen = None
            watch.changed()

    def watch(self, name: str, *, expression: Callable[[], Expression], changed: Callable[[], None]) -> None:
        """Read ``expression()`` (a scalar subquery) with every revision check; call ``changed`` when it
        moves or a new revision appears. Registered once per process, from an app's ``ready()``."""
        self._watches[name] = _Watch(expression=expression, changed=changed)

    def check(self) -> None:
        """Look for a newer revision (and watched changes) if the last look is older than the interval."""
        now = time.monotonic()
        if now - self._checked_at < settings.ARBITER_REVISION_CHECK_SECONDS and self._current is not None:
            return
        watches = list(self._watches.items())
        names = [f"watch_{i}" for i in range(len(watches))]
        head = (
            ConfigRevision.objects.order_by("-number")
            .annotate(**{n: w.expression() for n, (_, w) in zip(names, watches, strict=True)})
            .values_list("number", "digest", *names)
            .first()
        )
        current = (head[0], head[1]) if head else (0, "")
        revised = current != self._current
        self._current = current
        self._checked_at = now
        if revised:
            metrics.engine_revision_seen(backend=settings.ARBITER_ENGINE, revision=current[0])
        for i, (_, watch) in enumerate(watches):
            # Before the first revision nothing is read: watchers are told every time, and keep nothing.
            # A new revision tells them too: what they keep may name configuration (a point's key).
            value = head[2 + i] if head else None
            if revised or value is None or value != watch.seen:
                watch.seen = value
                watch.changed()

    def _compile(self, number: int, digest: str, snapshot: dict[str, object]) -> CompiledConfig:
        key = (number, digest)
        with self._lock:
            found = self._compiled.get(key)
            if found is not None:
                self._compiled.move_to_end(key)
                return found
        compiled = compile_config(snapshot, revision=number, backend=settings.ARBITER_ENGINE)
        with self._lock:
            self._compiled[key] = compiled
            while len(self._compiled) > _KEEP:
                self._compiled.popitem(last=False)
        return compiled

    def current(self) -> CompiledConfig:
        """The engine for the newest revision (an empty configuration before the first one)."""
        self.check()
        assert self._current is not None
        number, digest = self._current
        with self._lock:
            found = self._compiled.get((number, digest))
        if found is not None:
            return found
        if number == 0:
            return self._compile(0, "", _EMPTY_SNAPSHOT)
        return self.for_revision(number)

    def for_revision(self, number: int) -> CompiledConfig:
        """The engine exactly as it was at ``number``; raises ``ConfigRevision.DoesNotExist``."""
        digest = ConfigRevision.objects.filter(number=number).values_list("digest", flat=True).first()
        if digest is None:
            raise ConfigRevision.DoesNotExist(f"no configuration revision {number}")
        with self._lock:
            found = self._compiled.get((number, digest))
        if found is not None:
            return found
        snapshot = ConfigRevision.objects.values_list("snapshot", flat=True).get(number=number)
        return self._compile(number, digest, snapshot)


engines = EngineCache()


def revision_readiness(**_: object) -> dict[str, tuple[bool, str]]:
    """For ``/readyz``: the current configuration revision compiles (``decision_service.health``)."""
    from django.db import DatabaseError

    from rules.engine.compiler import CompileError

    try:
        config = engines.current()
    except CompileError as exc:
        return {"revision": (False, f"the current revision does not compile: {exc}")}
    except DatabaseError:
        return {"revision": (False, "the current revision cannot be read")}
    if config.revision == 0:
        return {"revision": (True, "no configuration yet (empty)")}
    return {"revision": (True, f"revision {config.revision} compiled")}

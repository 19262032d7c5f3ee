"""Which reported events are kept: a failed turn whole, the rest by a ratio, decided per turn.

Seed 000 §3.4: errors are traced always, normal runs at a small ratio (1%). The unit kept or dropped is
a *turn*, so a kept turn reads whole:

- a turn is the events of one request that share a ``turn_id`` (the batch's, or an event's own); an event
  sent without one is a turn by itself;
- a turn *failed* when any of its events has status ``error`` or is an ``error_handled``; a failed turn is
  always kept;
- any other turn is kept when a hash of (session, turn id) falls under the ratio: the same turn of the
  same session is kept or dropped the same way on every worker and on a retry. An event with neither a
  turn id nor an event id has nothing stable to hash and is drawn at random.

A turn's failure is seen within one request: a runtime sends a turn's events together (the client does),
or an earlier part of a turn that later failed may have been dropped.

Decisions are never sampled: the decision log is the audit trail and records every decision.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_SCALE = float(1 << 64)


def turn_failed(events: Iterable[Mapping[str, Any]]) -> bool:
    return any(e.get("status") == "error" or e.get("type") == "error_handled" for e in events)


def turn_kept(*, session_key: str, turn: str | None, ratio: float) -> bool:
    """Whether a turn that did not fail is kept at ``ratio`` (0: none, 1: all); ``turn`` None: at random."""
    if ratio >= 1:
        return True
    if ratio <= 0:
        return False
    if turn is None:
        return random.random() < ratio  # noqa: S311 (sampling, not secrecy)
    digest = hashlib.sha256(f"{session_key}\x00{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE < ratio


@dataclass(frozen=True)
class Sampled:
    kept: list[dict[str, Any]]
    dropped: int
    failed_turns: int


def sample(*, session_key: str, events: Sequence[dict[str, Any]], ratio: float) -> Sampled:
    """The events to keep, in the order sent (see the module docstring)."""
    turns: dict[str, list[int]] = {}
    for i, event in enumerate(events):
        turn = event.get("turn_id") or ""
        key = f"t:{turn}" if turn else (f"e:{event['event_id']}" if event.get("event_id") else f"i:{i}")
        turns.setdefault(key, []).append(i)
    keep: set[int] = set()
    failed = 0
    for key, members in turns.items():
        group = [events[i] for i in members]
        if turn_failed(group):
            failed += 1
            keep.update(members)
        elif turn_kept(session_key=session_key, turn=None if key.startswith("i:") else key, ratio=ratio):
            keep.update(members)
    kept = [e for i, e in enumerate(events) if i in keep]
    return Sampled(kept=kept, dropped=len(events) - len(kept), failed_turns=failed)

"""Which changes to a state machine's guards and events are high-risk (``rules.governance.risk`` asks).

A guard keeps an agent's move out of a state until the session holds valid fields or a decision of a
named point with one of the named outcomes cites it. Where a high-risk rule sends sessions (its outcome
mapped through its point's state map — see "risk by effect" in risk.py), that state is one the rule's
authors meant to be entered on their terms; removing a guard on an edge into it, or weakening one (a
field no longer required, the decision no longer required, another point, an outcome more accepted),
lets an agent walk in on less: high-risk. A guard added or made stricter applies at once — guards hold
agents' moves only, never the moves rules make through their state map, so it cannot stop a rule.
New events and events removed change no guard: every event still moves along an edge of the transition
table, whose own changes are high-risk already. Pure functions over document data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext_noop


def guard_weakened(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
    """Whether a move that ``before`` refused could pass ``after``."""
    before, after = before or {}, after or {}
    if set(before.get("requires_fields") or ()) - set(after.get("requires_fields") or ()):
        return True
    needed, given = before.get("requires_decision"), after.get("requires_decision")
    if not needed:
        return False
    if not given or given.get("point") != needed.get("point"):
        return True
    return bool(set(given.get("outcomes") or ()) - set(needed.get("outcomes") or ()))


def _edges(guards: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(source, to): guard for source, targets in guards.items() for to, guard in targets.items()}


def _events(events: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {e["name"]: e for e in events if isinstance(e, Mapping) and isinstance(e.get("name"), str)}


def guard_risks(
    before: Mapping[str, Any], after: Mapping[str, Any], routed: set[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Why changing a machine's document ``before`` to ``after`` needs approval, as (message id, params).

    ``routed`` is every state a high-risk rule sends sessions of this machine to, before or after.
    """
    weakened: list[str] = []
    old, new = _edges(before.get("guards") or {}), _edges(after.get("guards") or {})
    for source, to in sorted(old.keys() | new.keys()):
        if to in routed and guard_weakened(old.get((source, to)), new.get((source, to))):
            weakened.append(f"{source} → {to}")
    old_events, new_events = _events(before.get("events") or []), _events(after.get("events") or [])
    for name in sorted(old_events.keys() & new_events.keys()):
        was, now = old_events[name], new_events[name]
        if {was.get("to"), now.get("to")} & routed and guard_weakened(was.get("guard"), now.get("guard")):
            weakened.append(name)
    if weakened:
        yield (
            gettext_noop(
                "removes or weakens the guard of %(guards)s, into a state where a high-risk rule sends sessions"
            ),
            {"guards": ", ".join(weakened)},
        )

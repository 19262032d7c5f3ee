"""A state machine's events and guards as plain data, and their validation. No database; messages go
through gettext.

An **event** is a named move: ``{name, from: [states], to: state, guard?}``. A **guard** is what a move
needs besides being in the transition table: ``requires_fields`` (fields that hold valid values) and
``requires_decision`` (``{point, outcomes}``: a decision of the session at that point, in its current
state, with one of those outcomes, cited by the move). Guards sit on edges — ``guards: {from: {to:
guard}}``, checked on every agent move along the edge, events included — and on events (``guard``),
checked when that event is sent.

The transition table stays the one legality check: an event or a guard whose ``from → to`` edge is not in
``transitions`` is a configuration error here, so a session never takes a move the table does not allow.

``machine_event_problems`` is to ``StateMachine.events`` and ``.guards`` what ``machine_field_problems``
is to ``.fields``: one pure function the model's ``clean()`` and the YAML checker both call, its problems
located (``("events", index, key…)`` or ``("guards", from, to, key…)``) so that the checker gives each
its line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext

from rules.config.validators import KEY as _KEY

EVENT_KEYS = ("name", "description", "from", "to", "guard")
GUARD_KEYS = ("requires_fields", "requires_decision")
DECISION_KEYS = ("point", "outcomes")
# Where a problem is: ("events", index, key, …) or ("guards", from, to, key, …); () for neither list.
EventAt = tuple[int | str, ...]


def canonical_guard(guard: Mapping[str, Any]) -> dict[str, Any]:
    """A guard as it is stored and exported: keys in ``GUARD_KEYS`` order, empty ones left out."""
    shown: dict[str, Any] = {}
    if guard.get("requires_fields"):
        shown["requires_fields"] = list(guard["requires_fields"])
    decision = guard.get("requires_decision")
    if isinstance(decision, Mapping) and decision:
        shown["requires_decision"] = {k: decision[k] for k in DECISION_KEYS if k in decision}
    return shown


def canonical_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event as it is stored and exported: keys in ``EVENT_KEYS`` order, an empty description or guard
    left out."""
    shown = {k: event[k] for k in ("name", "description", "from", "to") if k in event and event[k] != ""}
    if isinstance(event.get("guard"), Mapping) and (guard := canonical_guard(event["guard"])):
        shown["guard"] = guard
    return shown


def canonical_guards(guards: Mapping[str, Any], states: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The edge guards in the order of the machine's ``states`` (PostgreSQL's jsonb keeps no key order),
    each in its canonical form, empty ones left out."""
    order = {state: index for index, state in enumerate(states)}
    shown: dict[str, dict[str, Any]] = {}
    for source in sorted(guards, key=lambda s: order.get(s, len(order))):
        targets = guards[source]
        kept = {
            to: canonical_guard(targets[to])
            for to in sorted(targets, key=lambda s: order.get(s, len(order)))
            if canonical_guard(targets[to])
        }
        if kept:
            shown[source] = kept
    return shown


def machine_event_problems(
    *,
    events: Any,
    guards: Any,
    states: Sequence[str],
    transitions: Mapping[str, Sequence[str]],
    field_names: Sequence[str],
    points: Mapping[str, Sequence[str]] | None,
    all_points: bool = True,
) -> dict[EventAt, str]:
    """Every reason the events and guards cannot be used, located; empty when they are sound.

    ``field_names``: the machine's declared fields (``requires_fields`` must name them). ``points``: each
    decision point's outcomes (``requires_decision`` must name one and its outcomes), or ``None`` where
    the points are not known. ``all_points=False``: ``points`` may lack points still to be written (an
    import writes machines before the points that name them), so a point missing from it is not a
    problem; its outcomes are checked when it is there.
    """
    context = _Context(states, transitions, field_names, points, all_points)
    problems: dict[EventAt, str] = {}
    if not isinstance(events, list):
        problems[("events",)] = gettext("Give the events as a list, each with a name, from and to.")
    else:
        seen: set[str] = set()
        for index, event in enumerate(events):
            for at, message in _event_problems(event, context).items():
                problems[("events", index, *at)] = message
            name = event.get("name") if isinstance(event, Mapping) else None
            if isinstance(name, str) and name in seen:
                problems[("events", index, "name")] = gettext("The event %(name)s is declared twice.") % {"name": name}
            if isinstance(name, str):
                seen.add(name)
    if not isinstance(guards, Mapping):
        problems[("guards",)] = gettext("Give the guards as a mapping of state to the states it moves to.")
        return problems
    for source, targets in guards.items():
        if not isinstance(targets, Mapping):
            problems[("guards", source)] = gettext("Give the guards of a state as a mapping of target to guard.")
            continue
        for target, guard in targets.items():
            if problem := context.edge_problem(source, target):
                problems[("guards", source, target)] = problem
                continue
            for at, message in _guard_problems(guard, context).items():
                problems[("guards", source, target, *at)] = message
    return problems


class _Context:
    def __init__(
        self,
        states: Sequence[str],
        transitions: Mapping[str, Sequence[str]],
        field_names: Sequence[str],
        points: Mapping[str, Sequence[str]] | None,
        all_points: bool,
    ) -> None:
        self.states = set(states) if isinstance(states, list) else set()
        self.transitions = transitions if isinstance(transitions, Mapping) else {}
        self.field_names = set(field_names)
        self.points = points
        self.all_points = all_points

    def edge_problem(self, source: Any, target: Any) -> str | None:
        if source not in self.states or target not in self.states:
            unknown = [str(s) for s in (source, target) if s not in self.states]
            return gettext("Not a state of the machine: %(states)s.") % {"states": ", ".join(unknown)}
        targets = self.transitions.get(source)
        if not isinstance(targets, list) or target not in targets:
            return gettext("The transitions do not allow %(from)s → %(to)s; add it there first.") % {
                "from": source,
                "to": target,
            }
        return None


def _event_problems(event: Any, context: _Context) -> dict[EventAt, str]:
    if not isinstance(event, Mapping):
        return {(): gettext("Declare each event as a mapping with a name, from and to.")}
    problems: dict[EventAt, str] = {}
    for key in event:
        if key not in EVENT_KEYS:
            problems[(str(key),)] = gettext("Unknown key %(key)s (expected one of: %(keys)s).") % {
                "key": key,
                "keys": ", ".join(EVENT_KEYS),
            }
    name = event.get("name")
    if not isinstance(name, str) or not _KEY.fullmatch(name):
        problems[("name",)] = gettext(
            "Name the event with a key: lower-case letters, digits and underscores, starting with a letter."
        )
    if not isinstance(event.get("description", ""), str):
        problems[("description",)] = gettext("The description must be text.")
    sources, target = event.get("from"), event.get("to")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
        problems[("from",)] = gettext("List the states the event may be sent in, e.g. [executing].")
    elif len(set(sources)) != len(sources):
        problems[("from",)] = gettext("Each state may be listed once.")
    if not isinstance(target, str) or target not in context.states:
        problems[("to",)] = gettext("Name the state the event moves to; it must be one of the states.")
    if isinstance(sources, list) and not problems.keys() & {("from",), ("to",)}:
        for index, source in enumerate(sources):
            if problem := context.edge_problem(source, target):
                problems[("from", index)] = problem
    if event.get("guard") is not None:
        for at, message in _guard_problems(event["guard"], context).items():
            problems[("guard", *at)] = message
    return problems


def _guard_problems(guard: Any, context: _Context) -> dict[EventAt, str]:
    if not isinstance(guard, Mapping) or not guard:
        return {(): gettext("Give the guard as a mapping with requires_fields, requires_decision or both.")}
    problems: dict[EventAt, str] = {}
    for key in guard:
        if key not in GUARD_KEYS:
            problems[(str(key),)] = gettext("Unknown key %(key)s (expected one of: %(keys)s).") % {
                "key": key,
                "keys": ", ".join(GUARD_KEYS),
            }
    if "requires_fields" in guard and (problem := _fields_problem(guard["requires_fields"], context)):
        problems[("requires_fields",)] = problem
    if "requires_decision" in guard:
        for at, message in _decision_problems(guard["requires_decision"], context).items():
            problems[("requires_decision", *at)] = message
    return problems


def _fields_problem(names: Any, context: _Context) -> str | None:
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return gettext("List the fields the move needs, e.g. [receiver_phone].")
    if len(set(names)) != len(names):
        return gettext("Each field may be listed once.")
    undeclared = [n for n in names if n not in context.field_names]
    if undeclared:
        return gettext("Not a field of the machine: %(fields)s.") % {"fields": ", ".join(undeclared)}
    return None


def _decision_problems(decision: Any, context: _Context) -> dict[EventAt, str]:
    if not isinstance(decision, Mapping):
        return {(): gettext("Give the decision as a mapping with a point and its outcomes.")}
    problems: dict[EventAt, str] = {}
    for key in decision:
        if key not in DECISION_KEYS:
            problems[(str(key),)] = gettext("Unknown key %(key)s (expected one of: %(keys)s).") % {
                "key": key,
                "keys": ", ".join(DECISION_KEYS),
            }
    point, outcomes = decision.get("point"), decision.get("outcomes")
    known = context.points.get(point) if context.points is not None and isinstance(point, str) else None
    if not isinstance(point, str) or not _KEY.fullmatch(point):
        problems[("point",)] = gettext("Name the decision point by its key.")
    elif context.points is not None and context.all_points and known is None:
        problems[("point",)] = gettext("There is no decision point %(point)s.") % {"point": point}
    if not isinstance(outcomes, list) or not outcomes or not all(isinstance(o, str) for o in outcomes):
        problems[("outcomes",)] = gettext("List the outcomes the decision must have, e.g. [approve].")
    elif len(set(outcomes)) != len(outcomes):
        problems[("outcomes",)] = gettext("Each outcome may be listed once.")
    elif known is not None and (stray := [o for o in outcomes if o not in known]):
        problems[("outcomes",)] = gettext("Not an outcome of %(point)s: %(outcomes)s.") % {
            "point": point,
            "outcomes": ", ".join(stray),
        }
    return problems

"""Checking the ``machines`` entries of a configuration document (``rules.config.document.validate``
reads the rest): each state machine's keys, then its graph through ``machine_problems``, then its
field declarations through ``machine_field_problems``."""

from __future__ import annotations

import math
from typing import Any

from rules.config.document.readers import Reader, clause, describe, or_default
from rules.config.document.spelling import drop_empty
from rules.config.document.yamlload import Path
from rules.config.event_definitions import canonical_event, canonical_guards, machine_event_problems
from rules.config.field_definitions import canonical_field, machine_field_problems
from rules.config.machine_definitions import machine_problems

MACHINE_KEYS = (
    "key",
    "name",
    "description",
    "states",
    "initial",
    "handoff",
    "terminal",
    "transitions",
    "actions",
    "timeouts",
    "max_anomalies",
    "fields",
    "events",
    "guards",
)
MACHINE_REQUIRED = ("key", "states", "initial", "handoff", "transitions")

# ``machine_problems`` names model fields; the document names them like this.
_MACHINE_FIELD_KEYS = {
    "states": "states",
    "initial_state": "initial",
    "handoff_state": "handoff",
    "terminal_states": "terminal",
    "transitions": "transitions",
    "actions": "actions",
    "timeouts": "timeouts",
}


class MachineReader(Reader):
    """The state machine part of the document checker."""

    # Set by ``note_references`` before any record is read; ``None``: the points are not known.
    point_outcomes: dict[str, list[str]] | None = None

    def machine(self, item: Any, path: Path) -> dict[str, Any] | None:
        record = self.mapping(item, path, MACHINE_KEYS, MACHINE_REQUIRED, what="a state machine (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        name = self.optional_text(record, path, "name", 200)
        description = self.optional_text(record, path, "description")
        states = self.key_list(record["states"], (*path, "states")) if "states" in record else None
        initial = self.key(record["initial"], (*path, "initial")) if "initial" in record else None
        handoff = self.key(record["handoff"], (*path, "handoff")) if "handoff" in record else None
        terminal = self.key_list(or_default(record, "terminal", []), (*path, "terminal"))
        transitions = self.state_mapping(record.get("transitions"), (*path, "transitions"), self.key_list)
        actions = self.state_mapping(or_default(record, "actions", {}), (*path, "actions"), self.action_list)
        timeouts = self.state_mapping(or_default(record, "timeouts", {}), (*path, "timeouts"), self.seconds)
        max_anomalies = self.integer(or_default(record, "max_anomalies", 3), (*path, "max_anomalies"), minimum=1)
        if states is None or transitions is None:
            return None
        # The graph checks run even when a side field is unreadable, so that every problem shows at once;
        # a field already reported as unreadable is not reported again.
        readable = {
            "initial_state": initial is not None,
            "handoff_state": handoff is not None,
            "terminal_states": terminal is not None,
            "actions": actions is not None,
            "timeouts": timeouts is not None,
        }
        for field, message in machine_problems(
            states=states,
            initial_state=initial or "",
            handoff_state=handoff or "",
            terminal_states=terminal or [],
            transitions=transitions,
            actions=actions or {},
            timeouts=timeouts or {},
        ).items():
            if readable.get(field, True):
                self.problem((*path, _MACHINE_FIELD_KEYS.get(field, field)), clause(message))
        fields = self.field_declarations(
            or_default(record, "fields", []),
            (*path, "fields"),
            states=states,
            closed_states=[s for s in (initial, handoff) if s],
        )
        events, guards = self.events_and_guards(record, path, states=states, transitions=transitions, fields=fields)
        if self.count() > start or actions is None or timeouts is None or fields is None:
            return None
        return drop_empty(
            {
                "key": key,
                "name": name,
                "description": description,
                "states": states,
                "initial": initial,
                "handoff": handoff,
                "terminal": terminal,
                "transitions": {s: transitions[s] for s in states if transitions.get(s)},
                "actions": {s: actions[s] for s in states if s in actions},
                "timeouts": {s: timeouts[s] for s in states if s in timeouts},
                "max_anomalies": max_anomalies,
                "fields": fields,
                "events": events,
                "guards": guards,
            },
            "name",
            "description",
            "actions",
            "timeouts",
            "fields",
            "events",
            "guards",
        )

    def note_references(self, sections: dict[str, list[Any]]) -> None:
        """What machines and points refer to across the document: each machine's states, each point's
        outcomes — every key the file declares, valid record or not, so a problem is reported once."""
        self.machine_states = {
            item["key"]: [s for s in item.get("states", []) if isinstance(s, str)]
            for item in sections["machines"]
            if isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("states"), list)
        }
        # Each machine's declared fields (name → type), for the session_field conditions of its points; a
        # machine whose fields are no list is left out (its problem is reported with it, and then no
        # condition is checked against it).
        self.machine_fields: dict[str, dict[str, str] | None] = {
            item["key"]: (
                {
                    f["name"]: f["type"] if isinstance(f.get("type"), str) else ""
                    for f in item.get("fields") or []
                    if isinstance(f, dict) and isinstance(f.get("name"), str)
                }
                if isinstance(item.get("fields") or [], list)
                else None
            )
            for item in sections["machines"]
            if isinstance(item, dict) and isinstance(item.get("key"), str)
        }
        self.point_outcomes = {
            item["key"]: [o for o in item.get("outcomes", []) if isinstance(o, str)]
            for item in sections["points"]
            if isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("outcomes"), list)
        }

    def events_and_guards(
        self, record: dict[str, Any], path: Path, *, states: list[str], transitions: dict[str, Any], fields: Any
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The ``events:`` and ``guards:`` blocks: each problem of ``machine_event_problems`` at its line."""
        events, guards = or_default(record, "events", []), or_default(record, "guards", {})
        declared = [
            f["name"] for f in record.get("fields") or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
        ]
        problems = machine_event_problems(
            events=events,
            guards=guards,
            states=states,
            transitions=transitions,
            field_names=declared,
            points=self.point_outcomes,
        )
        for at, message in problems.items():
            self.problem((*path, *at), clause(message))
        if problems:
            return [], {}
        return [canonical_event(e) for e in events], canonical_guards(guards, states)

    def field_declarations(
        self, value: Any, path: Path, *, states: list[str], closed_states: list[str]
    ) -> list[dict[str, Any]] | None:
        """The ``fields:`` block: each problem of ``machine_field_problems`` at its own line."""
        items = self.sequence(value, path)
        if items is None:
            return None
        problems = machine_field_problems(fields=items, states=states, closed_states=closed_states)
        for at, message in problems.items():
            self.problem((*path, *at), clause(message))
        return None if problems else [canonical_field(item) for item in items]

    def state_mapping(self, value: Any, path: Path, check: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping of state to values, got {describe(value)}")
            return None
        result: dict[str, Any] = {}
        ok = True
        for state, item in value.items():
            checked = check(item, (*path, state))
            if checked is None:
                ok = False
            else:
                result[state] = checked
        return result if ok else None

    def action_list(self, value: Any, path: Path) -> list[str] | None:
        items = self.sequence(value, path)
        if items is None:
            return None
        actions = [self.text(item, (*path, index)) for index, item in enumerate(items)]
        if any(a is None for a in actions):
            return None
        if any(not a for a in actions):
            self.problem(path, "an action name cannot be empty")
            return None
        return [a for a in actions if a]

    def seconds(self, value: Any, path: Path) -> int | float | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            self.problem(path, f"expected a positive number of seconds, got {describe(value)}")
            return None
        return value

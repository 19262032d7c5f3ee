"""Checking the ``tools`` entries of a configuration document: each contract's keys, then everything
``tool_problems`` finds, each at its own line (a schema's problem at the schema key that has it)."""

from __future__ import annotations

from typing import Any

from rules.config.document.readers import Reader, clause
from rules.config.document.yamlload import Path
from rules.config.tool_definitions import TOOL_KEYS, TOOL_REQUIRED, canonical_tool, tool_problems


def _machines(items: list[Any]) -> dict[str, dict[str, Any]]:
    """The document's machines as the tool checks read them; a machine too broken to read is left out
    (its own problems are reported where it is)."""
    machines: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        states, actions, events = item.get("states"), item.get("actions") or {}, item.get("events") or []
        machines[item["key"]] = {
            "states": [s for s in states if isinstance(s, str)] if isinstance(states, list) else [],
            "actions": {s: a for s, a in actions.items() if isinstance(a, list)} if isinstance(actions, dict) else {},
            "events": [e for e in events if isinstance(e, dict)] if isinstance(events, list) else [],
        }
    return machines


class ToolReader(Reader):
    """The tool contract part of the document checker."""

    def tools(self, items: list[Any], machine_items: list[Any]) -> list[dict[str, Any]]:
        machines = _machines(machine_items)
        tools: list[dict[str, Any]] = []
        first: dict[str, int] = {}
        for index, item in enumerate(items):
            path: Path = ("tools", index)
            record = self.mapping(item, path, TOOL_KEYS, TOOL_REQUIRED, what="a tool contract (a mapping)")
            if record is None:
                continue
            name = record.get("name")
            if isinstance(name, str) and name in first:
                self.problem(
                    (*path, "name"),
                    f"duplicate name '{name}': tools[{first[name]}] (line {self.y.line_of(('tools', first[name]))}) "
                    "has it too",
                )
                continue
            if isinstance(name, str):
                first[name] = index
            if any(key not in record for key in TOOL_REQUIRED):
                continue
            problems = tool_problems(record, machines=machines)
            for at, message in problems.items():
                self.problem((*path, *at), clause(message))
            if not problems and all(key in TOOL_KEYS for key in record):
                tools.append(canonical_tool(record))
        return sorted(tools, key=lambda t: t["name"])

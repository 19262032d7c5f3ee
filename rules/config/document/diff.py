"""Compare two configuration documents record by record, and describe the difference for people.

Both sides are in the canonical shape of ``rules.config.selectors.config_document``. Records are matched by
key (rules by point and key), so the order records are written in a file never counts as a change.
Keyword terms are a set: adding or removing one is a change, reordering is not. Conditions are an
ordered list within their rule. Pure Python, no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from rules.engine.evasion import EVASION_DEFAULTS

Action = Literal["add", "change", "remove"]
Kind = Literal["threshold", "keyword_list", "point", "rule", "machine", "tool", "mcp_server"]

KIND_LABELS: dict[str, str] = {
    "threshold": "threshold",
    "keyword_list": "keyword list",
    "point": "point",
    "rule": "rule",
    "machine": "machine",
    "tool": "tool",
    "mcp_server": "MCP server",
}

# Every field of a record (besides its key) with the value a document leaves out.
THRESHOLD_FIELDS: dict[str, Any] = {
    "name": "",
    "description": "",
    "value": None,
    "unit": "",
    "min": None,
    "max": None,
    "high_risk": False,
}
KEYWORD_LIST_FIELDS: dict[str, Any] = {
    "name": "",
    "description": "",
    "match": "substring",
    "fold_traditional": True,
    "ignore_cjk_gaps": True,
    **EVASION_DEFAULTS,
    "terms": [],
}
POINT_FIELDS: dict[str, Any] = {
    "name": "",
    "description": "",
    "facts": {},
    "outcomes": [],
    "candidate_whitelist": [],
    "default_outcome": "",
    "when_no_candidate": "ask",
    "machine": "",
    "state_map": {},
    "fallback_state": "",
    "mask_skip": [],
    "mask_patterns": {},
    "mask_fact_paths": [],
    "mask_facts": True,
    "store_raw_output": False,
}
RULE_FIELDS: dict[str, Any] = {
    "description": "",
    "priority": None,
    "category": None,
    "match": "all",
    "mode": "enforce",
    "outcome": None,
    "effective_from": None,
    "effective_until": None,
    "conditions": [],
}
MACHINE_FIELDS: dict[str, Any] = {
    "name": "",
    "description": "",
    "states": [],
    "initial": "",
    "handoff": "",
    "terminal": [],
    "transitions": {},
    "actions": {},
    "timeouts": {},
    "max_anomalies": 3,
    "fields": [],
    "events": [],
    "guards": {},
}
TOOL_FIELDS: dict[str, Any] = {
    "description": "",
    "input_schema": None,
    "output_schema": None,
    "error_codes": [],
    "on_exhausted": "handoff",
    "timeout_ms": None,
    "max_concurrent": None,
    "circuit_breaker": None,
    "risk": None,
    "needs_approval_in": [],
}
MCP_SERVER_FIELDS: dict[str, Any] = {
    "description": "",
    "url": None,
    "auth": None,
    "timeout_ms": None,
    "enabled": True,
    "tools_refresh_s": None,
}
FIELDS: dict[str, dict[str, Any]] = {
    "threshold": THRESHOLD_FIELDS,
    "keyword_list": KEYWORD_LIST_FIELDS,
    "point": POINT_FIELDS,
    "rule": RULE_FIELDS,
    "machine": MACHINE_FIELDS,
    "tool": TOOL_FIELDS,
    "mcp_server": MCP_SERVER_FIELDS,
}


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class RecordChange:
    """One record added, changed (with the fields that differ) or removed.

    ``point`` is the point a rule belongs to (empty for other kinds). ``old`` and ``new`` are the
    record's documents on each side (``None`` where it does not exist).
    """

    action: Action
    kind: Kind
    key: str
    point: str = ""
    fields: tuple[FieldChange, ...] = ()
    old: dict[str, Any] | None = None
    new: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.point}.{self.key}" if self.point else self.key

    def changes(self, name: str) -> bool:
        return any(f.field == name for f in self.fields)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1`` and ``true`` differ (Python says they are equal), mapping order does not count."""
    return json.dumps(a, sort_keys=True, ensure_ascii=False) == json.dumps(b, sort_keys=True, ensure_ascii=False)


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> list[RecordChange]:
    """Every record-level difference between two canonical documents, in document order."""
    changes: list[RecordChange] = []
    changes += _section(old["thresholds"], new["thresholds"], "threshold")
    changes += _section(old["keyword_lists"], new["keyword_lists"], "keyword_list")
    old_points = {p["key"]: p for p in old["points"]}
    new_points = {p["key"]: p for p in new["points"]}
    for key in _keys_in_order(old["points"], new["points"]):
        old_point, new_point = old_points.get(key), new_points.get(key)
        point_change = _record("point", key, old_point, new_point)
        if point_change is not None:
            changes.append(point_change)
        old_rules = old_point.get("rules", []) if old_point else []
        new_rules = new_point.get("rules", []) if new_point else []
        changes += _section(old_rules, new_rules, "rule", point=key)
    changes += _section(old["machines"], new["machines"], "machine")
    # Tools are keyed by their name (as MCP names them); a document without tools has none.
    changes += _section(old.get("tools", []), new.get("tools", []), "tool", key_field=RECORD_KEY["tool"])
    changes += _section(
        old.get("mcp_servers", []), new.get("mcp_servers", []), "mcp_server", key_field=RECORD_KEY["mcp_server"]
    )
    return changes


# The field that names a record of each kind: ``key``, but a tool's or MCP server's ``name``.
RECORD_KEY: dict[str, str] = {kind: "key" for kind in FIELDS} | {"tool": "name", "mcp_server": "name"}


def _keys_in_order(old: list[dict[str, Any]], new: list[dict[str, Any]], key: str = "key") -> list[str]:
    """The new side's keys in its order, then the keys only the old side has."""
    keys = [r[key] for r in new]
    present = set(keys)
    return keys + [r[key] for r in old if r[key] not in present]


def _section(
    old: list[dict[str, Any]], new: list[dict[str, Any]], kind: Kind, point: str = "", key_field: str = "key"
) -> list[RecordChange]:
    old_by_key = {r[key_field]: r for r in old}
    new_by_key = {r[key_field]: r for r in new}
    changes = []
    for key in _keys_in_order(old, new, key_field):
        change = _record(kind, key, old_by_key.get(key), new_by_key.get(key), point=point)
        if change is not None:
            changes.append(change)
    return changes


def _record(
    kind: Kind, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None, point: str = ""
) -> RecordChange | None:
    if old is None and new is None:
        return None
    if old is None:
        return RecordChange("add", kind, key, point=point, new=new)
    if new is None:
        return RecordChange("remove", kind, key, point=point, old=old)
    fields = []
    for name, default in FIELDS[kind].items():
        before, after = old.get(name, default), new.get(name, default)
        if name == "terms":
            if set(before) != set(after):
                fields.append(FieldChange(name, before, after))
        elif not same(before, after):
            fields.append(FieldChange(name, before, after))
    if not fields:
        return None
    return RecordChange("change", kind, key, point=point, fields=tuple(fields), old=old, new=new)


# ---------------------------------------------------------------------------------------- for people


def diff_lines(changes: Iterable[RecordChange], notes: dict[tuple[str, str], str] | None = None) -> list[str]:
    """One line per added or removed record and per changed field: ``+``, ``-`` or ``~``, then the record.

    ``notes`` adds a remark to the line of a record, keyed by (kind, label).
    """
    notes = notes or {}
    lines: list[str] = []
    for change in changes:
        label = f"{KIND_LABELS[change.kind]} {change.label}"
        note = notes.get((change.kind, change.label))
        suffix = f" ({note})" if note else ""
        if change.action == "add":
            assert change.new is not None
            lines.append(f"+ {label}: {_summary(change.kind, change.new)}{suffix}")
        elif change.action == "remove":
            lines.append(f"- {label}{suffix}")
        else:
            for field_change in change.fields:
                lines.extend(f"~ {label}: {text}" for text in _field_texts(field_change))
    return lines


def _summary(kind: str, record: dict[str, Any]) -> str:
    if kind == "threshold":
        text = f"value {show(record['value'])}{(' ' + record['unit']) if record.get('unit') else ''}"
        if record.get("min") is not None or record.get("max") is not None:
            text += f", bounds {show(record.get('min'))} … {show(record.get('max'))}"
        return text + (", high risk" if record.get("high_risk") else "")
    if kind == "keyword_list":
        terms = record.get("terms", [])
        return f"{record.get('match', 'substring')} match, {len(terms)} terms {show(terms)}"
    if kind == "point":
        return f"outcomes {show(record['outcomes'])}, default {record['default_outcome']}"
    if kind == "rule":
        conditions = " and " if record.get("match", "all") == "all" else " or "
        when = conditions.join(show(c) for c in record.get("conditions", [])) or "always"
        mode = "" if record.get("mode", "enforce") == "enforce" else f", {record['mode']}"
        return f"priority {record['priority']}, {record['category']}{mode}: {when} → {record['outcome']}"
    if kind == "machine":
        return f"{len(record['states'])} states, initial {record['initial']}, handoff {record['handoff']}"
    if kind == "tool":
        return f"{record['risk']}, {len(record.get('error_codes', []))} error codes"
    if kind == "mcp_server":
        return f"{record['url']}, auth {record['auth']['kind']}{'' if record.get('enabled', True) else ', disabled'}"
    return ""


def _field_texts(change: FieldChange) -> list[str]:
    name, old, new = change.field, change.old, change.new
    if name == "terms":
        added = [t for t in new if t not in set(old)]
        removed = [t for t in old if t not in set(new)]
        texts = []
        if added:
            texts.append(f"terms added {', '.join(added)}")
        if removed:
            texts.append(f"terms removed {', '.join(removed)}")
        return texts
    if name == "conditions":
        texts = []
        for index in range(max(len(old), len(new))):
            before = old[index] if index < len(old) else None
            after = new[index] if index < len(new) else None
            if before is None:
                texts.append(f"conditions[{index}] added {show(after)}")
            elif after is None:
                texts.append(f"conditions[{index}] removed {show(before)}")
            elif not same(before, after):
                texts.append(f"conditions[{index}] {show(before)} → {show(after)}")
        return texts
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            f"{name}.{key} {show(old.get(key))} → {show(new.get(key))}"
            for key in [*old, *(k for k in new if k not in old)]
            if not same(old.get(key), new.get(key))
        ]
    return [f"{name} {show(old)} → {show(new)}"]


_BARE = re.compile(r"[\w.:+<>=!/-]+")


def show(value: Any) -> str:
    """A short, unambiguous spelling of a value for a diff line."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return value if _BARE.fullmatch(value) else json.dumps(value, ensure_ascii=False)
    flow = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, sort_keys=False, width=1_000_000)
    return flow.strip()

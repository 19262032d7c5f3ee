"""A partial configuration document, merged onto the live one: what a change request proposes when staff
send only the records they touch (``POST /api/v1/change-requests`` with ``"partial": true``).

Pure, like the rest of this package: the live document comes in as data (``config_document()``'s
canonical shape), nothing is read from the database.

The rules of the merge:

- A record (threshold, keyword list, point, machine) is named by its ``key`` (a tool or MCP server by
  its ``name``). A key the live configuration has is *updated*: the fields given replace the live ones,
  the others stay. A new key is a new record, given whole.
- A point's ``rules`` are merged the same way, by rule key, inside the point: ``points: [{key:
  refund_approval, rules: [{key: over_auto_refund_limit, priority: 15}]}]`` changes one rule's priority.
  A rule's ``conditions``, like every other list or mapping field, is replaced whole when given.
- Nothing is deleted unless named under ``delete``: ``delete: {thresholds: [key, …], keyword_lists:
  […], points: […], machines: […], tools: [name, …], mcp_servers: [name, …], rules: {point_key:
  [rule_key, …]}}``. A name that is not live is a problem, and so is a record both given and deleted.
- The merged document is then checked as a whole document is, so every problem a full document would
  have is found; each is reported at the partial's path and line where the partial wrote it (a problem
  in a live field the partial did not touch — a rule naming a threshold the partial deletes — keeps the
  merged document's path).
"""

from __future__ import annotations

import copy
from typing import Any

from rules.config.document.readers import describe
from rules.config.document.validate import TOP_KEYS, _Checker  # the one checker of a whole document
from rules.config.document.yamlload import LoadedYaml, Path, Problem, load_yaml
from rules.errors import ConfigError

SECTIONS = TOP_KEYS[1:]  # thresholds, keyword_lists, points, machines, tools, mcp_servers
# The field a section's records are merged and deleted by: ``key``, but a tool's or MCP server's ``name``.
KEY_FIELD = {name: "name" if name in ("tools", "mcp_servers") else "key" for name in SECTIONS}
DELETE_KEYS = (*SECTIONS, "rules")


class _Merge:
    def __init__(self, loaded: LoadedYaml) -> None:
        self.loaded = loaded
        self.moves: list[tuple[Path, Path]] = []  # (the partial's path, the merged document's path)

    def problem(self, path: Path, message: str) -> None:
        self.loaded.problem(path, message)

    def keyed(self, items: Any, path: Path, key: str = "key") -> list[tuple[int, dict[str, Any]]]:
        """The records of a section of the partial that have a key (the others are left to the checker)."""
        if not isinstance(items, list):
            return []
        return [(i, item) for i, item in enumerate(items) if isinstance(item, dict) and isinstance(item.get(key), str)]

    def records(
        self, live: list[dict[str, Any]], given: Any, at: Path, to: Path, nested: str = "", key: str = "key"
    ) -> list[dict[str, Any]]:
        """``live`` with the records of ``given`` (at the partial's path ``at``; the merged list is at ``to``)
        merged in by key; ``nested`` names a field of each record merged the same way (a point's rules)."""
        merged = [copy.deepcopy(r) for r in live]
        index = {r[key]: i for i, r in enumerate(merged)}
        keyed = dict(self.keyed(given, at, key))
        for i, item in enumerate(given if isinstance(given, list) else []):
            if i not in keyed:  # no key: passed on whole, for the checker to report where it is
                self.moves.append(((*at, i), (*to, len(merged))))
                merged.append(item)
                continue
            j = index.setdefault(item[key], len(merged))
            if j == len(merged):
                merged.append({})
            self.moves.append(((*at, i), (*to, j)))
            for name, value in item.items():
                if name == nested and isinstance(value, list) and isinstance(merged[j].get(name), list):
                    merged[j][name] = self.records(merged[j][name], value, (*at, i, name), (*to, j, name))
                else:
                    merged[j][name] = value
        return merged

    def delete(self, sections: dict[str, list[dict[str, Any]]], spec: Any, given: dict[str, set[str]]) -> None:
        """Drop the records ``spec`` (the partial's ``delete``) names from ``sections``."""
        if not isinstance(spec, dict):
            self.problem(
                ("delete",), f"expected a mapping with the keys {', '.join(DELETE_KEYS)}, got {describe(spec)}"
            )
            return
        for name, keys in spec.items():
            where: Path = ("delete", name)
            if name == "rules":
                if not isinstance(keys, dict):
                    self.problem(where, f"expected a mapping of point keys to rule keys, got {describe(keys)}")
                    continue
                points = {p["key"]: p for p in sections["points"]}
                for point, rule_keys in keys.items():
                    if point not in points:
                        self.problem((*where, point), f"no point {describe(point)} to delete rules of")
                    else:
                        rules = points[point].setdefault("rules", [])
                        points[point]["rules"] = self.drop(rules, rule_keys, (*where, point), set())
            elif name in SECTIONS:
                sections[name] = self.drop(sections[name], keys, where, given[name], KEY_FIELD[name])
            else:
                self.problem(where, f"unknown key {describe(name)}; expected one of {', '.join(DELETE_KEYS)}")

    def drop(
        self, records: list[dict[str, Any]], keys: Any, where: Path, given: set[str], key_field: str = "key"
    ) -> list[dict[str, Any]]:
        if not isinstance(keys, list):
            self.problem(where, f"expected a list of keys, got {describe(keys)}")
            return records
        live = {r.get(key_field) for r in records}
        for i, key in enumerate(keys):
            if not isinstance(key, str) or key not in live:
                self.problem((*where, i), f"{describe(key)} is not in the live configuration")
            elif key in given:
                self.problem((*where, i), f"{describe(key)} is both given and deleted")
        return [r for r in records if r.get(key_field) not in set(keys if isinstance(keys, list) else [])]

    def translate(self, path: Path) -> Path:
        """The merged document's path of the partial's ``path``."""
        best: tuple[Path, Path] | None = None
        for at, to in self.moves:
            if path[: len(at)] == at and (best is None or len(at) > len(best[0])):
                best = (at, to)
        return path if best is None else (*best[1], *path[len(best[0]) :])

    def untranslate(self, path: Path) -> Path:
        """The partial's path of the merged document's ``path`` (itself when the partial did not write it)."""
        best: tuple[Path, Path] | None = None
        for at, to in self.moves:
            if path[: len(to)] == to and (best is None or len(to) > len(best[1])):
                best = (at, to)
        return path if best is None else (*best[0], *path[len(best[1]) :])


def config_merge_check(text: str, live: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The partial YAML document ``text`` merged onto ``live`` (a canonical document), checked:
    (canonical merged document, []) or (None, every problem, at the partial's paths and lines)."""
    loaded = load_yaml(text)
    merge = _Merge(loaded)
    data = loaded.data if loaded.parsed else None
    if loaded.parsed and not isinstance(data, dict):
        loaded.problem((), f"expected a mapping with the keys {', '.join((*TOP_KEYS, 'delete'))}, got {describe(data)}")
    if not isinstance(data, dict) or loaded.problems:
        return None, [str(p) for p in sorted(loaded.problems, key=lambda p: p.line)]
    merged: dict[str, Any] = {"version": data.get("version", live["version"])}
    given: dict[str, set[str]] = {}
    for name in SECTIONS:
        items = data.get(name, [])
        if not isinstance(items, list):
            loaded.problem((name,), f"expected a list, got {describe(items)}")
        key = KEY_FIELD[name]
        given[name] = {item[key] for _, item in merge.keyed(items, (name,), key)}
        nested = "rules" if name == "points" else ""
        listed = items if isinstance(items, list) else []
        merged[name] = merge.records(live.get(name, []), listed, (name,), (name,), nested, key)
    if "delete" in data:
        merge.delete(merged, data["delete"], given)
    for name in data.keys() - {*TOP_KEYS, "delete"}:
        loaded.problem((name,), f"unknown key {describe(name)}; expected one of {', '.join((*TOP_KEYS, 'delete'))}")
    if loaded.problems:
        return None, [str(p) for p in sorted(loaded.problems, key=lambda p: p.line)]
    checked = LoadedYaml(
        data=merged,
        parsed=True,
        lines={merge.translate(p): line for p, line in loaded.lines.items()},
        raw={merge.translate(p): raw for p, raw in loaded.raw.items()},
    )
    document = _Checker(checked).document(merged)
    if checked.problems:
        located = [Problem(merge.untranslate(p.path), p.line, p.message) for p in checked.problems]
        return None, [str(p) for p in sorted(located, key=lambda p: p.line)]
    return document, []


def config_merge_from_yaml(text: str, live: dict[str, Any]) -> dict[str, Any]:
    """As ``config_merge_check``; raises ``ConfigError`` listing every problem."""
    document, problems = config_merge_check(text, live)
    if problems or document is None:
        raise ConfigError(problems or ["document: not a configuration (line 1)"])
    return document

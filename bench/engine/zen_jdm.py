"""The same compiled point as a GoRules JDM decision table, evaluated by ``zen-engine`` (benchmark only).

One row per enforce rule, in the engine's order (priority, then key), hit policy *first*: the first row
that holds is the winning rule, as in ``rules.engine.evaluate``. Shadow rules never decide, so they have no
row (the native backend still evaluates them, to record them). Three rows at the end reproduce what
``evaluate`` does when no rule decides: a whitelisted candidate is accepted, another candidate falls back
to the default outcome, no candidate asks for one (or takes the default).

Columns: one per keyword list (``kw.bN``, true when the list hit), the candidate, its confidence, session
state and one per fact. A cell is a zen unary expression over ``$``; the conditions of an "any" rule go into one
expression column (no field) joined with ``or``. Keyword hits are computed before the call by the same
Aho–Corasick scanner the native backend uses, and that pre-pass is part of what is timed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import zen

from bench.engine.workload import Request
from rules.engine.compiler import CompiledPoint
from rules.engine.model import ConditionSpec, PointSpec
from rules.engine.normalize import normalize_text

_EXPR = "any"  # id of the expression column used by "any" rules


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _array(values: Any) -> str:
    return "[" + ", ".join(_literal(v) for v in sorted(values, key=repr)) + "]"


class Unsupported(ValueError):
    """A condition this translation does not cover (time windows, regular expressions, effective dates)."""


def _column(c: ConditionSpec) -> str:
    if c.kind == "input_contains":
        return f"kw.b{c.list_bit}"
    if c.kind in {"candidate_in", "candidate_not_in", "candidate_not_in_whitelist"}:
        return "cand"
    if c.kind == "candidate_confidence_below":
        return "conf"
    if c.kind == "session_state_in":
        return "state"
    if c.kind == "fact":
        return f"facts.{c.fact}"
    raise Unsupported(c.kind)


def _test(c: ConditionSpec, s: str, point: PointSpec) -> str:
    """The condition as a boolean zen expression over the subject ``s`` (``$`` inside a column).

    Never parenthesised: a unary cell that starts with ``(`` is read as an interval such as ``(1..5]``. The
    expressions hold ``and`` but no ``or``, so joining them with ``and`` (cells) or ``or`` (the column of an
    "any" rule, where ``and`` binds tighter) needs no parentheses either.
    """
    kind = c.kind
    if kind == "input_contains":
        return f"{s} == true"
    if kind == "candidate_in":
        return f"{s} in {_array(c.outcomes)}"
    if kind == "candidate_not_in":
        return f"{s} != null and {s} not in {_array(c.outcomes)}"
    if kind == "candidate_not_in_whitelist":
        return f"{s} != null and {s} not in {_array(point.whitelist)}"
    if kind == "candidate_confidence_below":
        return f"{s} != null and {s} < {_literal(c.value)}"
    if kind == "session_state_in":
        return f"{s} in {_array(c.states)}"
    if kind == "fact":
        # Comparing null raises in zen (and a raising cell skips its row); test for null first, as native does.
        if c.op == "in":
            if point.facts.get(c.fact) == "string_list":
                return f"{s} != null and some({s}, # in {_array(c.value)})"
            return f"{s} in {_array(c.value)}"
        return f"{s} != null and {s} {c.op} {_literal(c.value)}"
    raise Unsupported(kind)


def _cell(c: ConditionSpec, point: PointSpec) -> str:
    """The idiomatic unary cell where it means the same, the ``$`` form otherwise."""
    # An empty cell always holds, so an empty set of options keeps the "$ in []" form (which never does).
    if c.kind == "input_contains":
        return "true"
    if c.kind == "candidate_in" and c.outcomes:
        return ", ".join(_literal(v) for v in sorted(c.outcomes))
    if c.kind == "session_state_in" and c.states:
        return ", ".join(_literal(v) for v in sorted(c.states))
    if c.kind == "fact" and c.op == "in" and c.value and point.facts.get(c.fact) != "string_list":
        return ", ".join(_literal(v) for v in sorted(c.value, key=repr))
    if c.kind == "fact" and c.op == "==" and isinstance(c.value, str | bool):
        return _literal(c.value)
    return _test(c, "$", point)


def decision_table(point: PointSpec) -> dict[str, Any]:
    """The JDM document (one decision table between an input and an output node)."""
    columns: dict[str, dict[str, str]] = {}

    def col(field: str) -> str:
        if field not in columns:
            columns[field] = {"id": f"c{len(columns)}", "name": field, "field": field}
        return columns[field]["id"]

    rows: list[dict[str, str]] = []
    expr_used = False
    for rule in point.rules:
        if rule.shadow:
            continue
        if rule.effective_from is not None or rule.effective_until is not None:
            raise Unsupported("effective dates")
        row: dict[str, str] = {"_id": rule.key}
        if rule.combinator == "any" and len(rule.conditions) > 1:
            row[_EXPR] = " or ".join(_test(c, _column(c), point) for c in rule.conditions)
            expr_used = True
        else:
            by_column: dict[str, list[ConditionSpec]] = {}
            for c in rule.conditions:
                by_column.setdefault(col(_column(c)), []).append(c)
            for cid, conds in by_column.items():
                row[cid] = (
                    _cell(conds[0], point) if len(conds) == 1 else " and ".join(_test(c, "$", point) for c in conds)
                )
        row["o_decision"] = _literal(rule.outcome)
        row["o_ruled_by"] = '"hard_rule"'
        row["o_rule"] = _literal(rule.key)
        rows.append(row)
    cand = col("cand")
    if point.whitelist:
        rows.append(
            {
                "_id": "whitelisted_candidate",
                cand: ", ".join(_literal(v) for v in sorted(point.whitelist)),
                "o_decision": "cand",
                "o_ruled_by": '"llm_candidate"',
            }
        )
    rows.append(
        {
            "_id": "other_candidate",
            cand: "$ != null",
            "o_decision": _literal(point.default_outcome),
            "o_ruled_by": '"default"',
        }
    )
    if point.ask_when_no_candidate:
        rows.append({"_id": "no_candidate", "o_needs_candidate": "true"})
    else:
        rows.append({"_id": "no_candidate", "o_decision": _literal(point.default_outcome), "o_ruled_by": '"default"'})
    inputs = list(columns.values())
    if expr_used:
        inputs.append({"id": _EXPR, "name": "any of", "field": ""})
    outputs = [
        {"id": f"o_{name}", "name": name, "field": name} for name in ("decision", "ruled_by", "rule", "needs_candidate")
    ]
    position = {"x": 0, "y": 0}
    return {
        "contentType": "application/vnd.gorules.decision",
        "nodes": [
            {"id": "request", "type": "inputNode", "name": "request", "position": position, "content": {}},
            {
                "id": "table",
                "type": "decisionTableNode",
                "name": point.key,
                "position": position,
                "content": {
                    "hitPolicy": "first",
                    "inputs": inputs,
                    "outputs": outputs,
                    "rules": rows,
                    "passThrough": False,
                    "inputField": None,
                    "outputPath": None,
                    "executionMode": "single",
                },
            },
            {"id": "response", "type": "outputNode", "name": "response", "position": position, "content": {}},
        ],
        "edges": [
            {"id": "e1", "sourceId": "request", "targetId": "table", "type": "edge"},
            {"id": "e2", "sourceId": "table", "targetId": "response", "type": "edge"},
        ],
    }


class ZenPoint:
    """A point served by ``ZenEngine(loader).evaluate(key, context)``.

    ``loader`` picks how the engine gets the document: ``"content"`` (the default, and what the benchmark
    times) returns a ``ZenDecisionContent`` parsed once; ``"json"`` returns the JDM text, which zen-engine
    2.1.3 calls the loader for, and parses, on *every* evaluation; ``"static"`` hands the document to the
    engine's built-in static loader.
    """

    def __init__(self, compiled: CompiledPoint, loader: str = "content") -> None:
        self.compiled = compiled
        self.document = decision_table(compiled.spec)
        self.key = compiled.spec.key
        text = json.dumps(self.document, ensure_ascii=False)
        if loader == "content":
            content = zen.ZenDecisionContent(text)
            self.engine = zen.ZenEngine({"loader": lambda _key: content})
        elif loader == "json":
            self.engine = zen.ZenEngine({"loader": lambda _key: text})
        elif loader == "static":
            self.engine = zen.ZenEngine({"loader": {"type": "static", "content": {self.key: self.document}}})
        else:
            raise ValueError(loader)
        self.names = tuple(f"b{bit}" for bit in range(len(compiled.spec.keyword_lists)))
        self.rows = len(self.document["nodes"][1]["content"]["rules"])

    def keyword_hits(self, mask: int) -> dict[str, bool]:
        """``{"bN": True}`` for each list that hit. Lists that did not hit are left out: a missing field is
        null, which no ``== true`` test matches, and a smaller context is measurably cheaper to hand over."""
        names = self.names
        hits = {}
        while mask:
            low = mask & -mask
            hits[names[low.bit_length() - 1]] = True
            mask ^= low
        return hits

    def decider(self) -> Callable[[Request], dict[str, Any]]:
        scan = self.compiled.scanner.scan
        has_lists = bool(self.names)
        keyword_hits = self.keyword_hits
        evaluate = self.engine.evaluate
        key = self.key

        def decide(req: Request) -> dict[str, Any]:
            text = req.text
            mask = scan(normalize_text(text))[0] if has_lists and text else 0
            cand = req.candidate
            context = {
                "kw": keyword_hits(mask),
                "cand": cand.decision if cand is not None else None,
                "conf": cand.confidence if cand is not None else None,
                "facts": req.facts,
            }
            return evaluate(key, context)["result"]

        return decide


def outcome(result: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(decision, ruled_by, winning rule) from a zen result, as ``native_outcome`` gives it from a Decision."""
    return result.get("decision"), result.get("ruled_by"), result.get("rule")

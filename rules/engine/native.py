"""The default backend: each point becomes one generated Python function.

A generated function evaluates every rule with straight-line boolean expressions over local
variables, which measured about twice as fast as walking a list of closures at 200 rules. Rules that
need a keyword list sit under one bitmask test per list, so a request that hit no list skips them all. Only
identifiers and integer literals are written into the source; every value from the configuration
(terms, outcomes, numbers, fact names) is bound as a named constant in the function's globals, so
nothing an operator types can change the generated code.
"""

from __future__ import annotations

from typing import Any

from rules.engine.compiler import Matcher
from rules.engine.interpreter import time_of_day, zone
from rules.engine.model import ConditionSpec, PointSpec, RuleSpec

_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}


class _Builder:
    def __init__(self, point: PointSpec) -> None:
        self.point = point
        self.consts: dict[str, Any] = {"_time_of_day": time_of_day}
        self.prelude: list[str] = []
        self.facts: dict[str, str] = {}
        self.zones: dict[str, str] = {}

    def const(self, value: Any) -> str:
        name = f"K{len(self.consts)}"
        self.consts[name] = value
        return name

    def fact_var(self, fact: str) -> str:
        if fact not in self.facts:
            var = f"f{len(self.facts)}"
            self.facts[fact] = var
            self.prelude.append(f"    {var} = facts.get({self.const(fact)})")
        return self.facts[fact]

    def tod_var(self, tz: str) -> str:
        if tz not in self.zones:
            var = f"t{len(self.zones)}"
            self.zones[tz] = var
            zone(tz)  # fail at compile time, not on a request, if the zone is unknown
            self.prelude.append(f"    {var} = _time_of_day(now, {self.const(tz)})")
        return self.zones[tz]

    def condition(self, c: ConditionSpec) -> str:
        kind = c.kind
        if kind == "input_contains":
            return f"(mask & {1 << c.list_bit})"
        if kind == "candidate_in":
            return f"(cand is not None and cand in {self.const(c.outcomes)})"
        if kind == "candidate_not_in":
            return f"(cand is not None and cand not in {self.const(c.outcomes)})"
        if kind == "candidate_not_in_whitelist":
            return f"(cand is not None and cand not in {self.const(self.point.whitelist)})"
        if kind == "candidate_confidence_below":
            return f"(cand is not None and conf is not None and conf < {self.const(c.value)})"
        if kind == "session_state_in":
            return f"(state in {self.const(c.states)})"
        if kind == "time_window":
            t = self.tod_var(c.tz)
            start, end = self.const(c.window_start), self.const(c.window_end)
            if c.window_start < c.window_end:
                return f"({start} <= {t} < {end})"
            return f"({t} >= {start} or {t} < {end})"
        if kind == "fact":
            f = self.fact_var(c.fact)
            if c.op == "in":
                options = self.const(frozenset(c.value))
                if self.point.facts.get(c.fact) == "string_list":
                    return f"({f} is not None and not {options}.isdisjoint({f}))"
                return f"({f} is not None and {f} in {options})"
            return f"({f} is not None and {f} {_CMP[c.op]} {self.const(c.value)})"
        raise ValueError(f"unknown condition kind {kind!r}")

    @staticmethod
    def gate(rule: RuleSpec) -> int:
        """Keyword bits of which at least one must have hit for ``rule`` to hold (0: no such bits).

        Most rules test a keyword list; in a request that hit none of a rule's lists the rule cannot
        hold, so it is grouped under one test of the bitmask instead of being tested on its own.
        """
        keyword_bits = [1 << c.list_bit for c in rule.conditions if c.kind == "input_contains"]
        if not keyword_bits:
            return 0
        if rule.combinator == "all":
            return keyword_bits[0]
        if len(keyword_bits) == len(rule.conditions):  # "any" over keyword lists only
            return sum(set(keyword_bits))
        return 0

    def build(self) -> Matcher:
        always: list[str] = []
        gated: dict[int, list[str]] = {}
        for index, rule in enumerate(self.point.rules):
            parts: list[str] = []
            # Aware datetimes, not float timestamps: a float cannot tell every microsecond apart.
            if rule.effective_from is not None:
                parts.append(f"(now >= {self.const(rule.effective_from)})")
            if rule.effective_until is not None:
                parts.append(f"(now < {self.const(rule.effective_until)})")
            conditions = [self.condition(c) for c in rule.conditions]
            if conditions:
                joiner = " and " if rule.combinator == "all" else " or "
                parts.append("(" + joiner.join(conditions) + ")")
            test = " and ".join(parts) if parts else "True"
            gate = self.gate(rule)
            if gate:
                gated.setdefault(gate, []).append(f"            if {test}:\n                out.append({index})")
            else:
                always.append(f"    if {test}:\n        out.append({index})")
        lines = ["def match(mask, cand, conf, facts, state, now):", "    out = []"]
        lines += self.prelude
        lines += always
        if gated:
            # Gated rules are appended group by group, out of priority order: sort once at the end.
            lines.append("    if mask:")
            lines.append("        n = len(out)")
            for gate, tests in gated.items():
                lines.append(f"        if mask & {gate}:")
                lines += tests
            lines.append("        if len(out) > n:")
            lines.append("            out.sort()")
        lines.append("    return tuple(out)")
        source = "\n".join(lines) + "\n"
        namespace: dict[str, Any] = dict(self.consts)
        code = compile(source, f"<arbiter point {self.point.key}>", "exec")
        exec(code, namespace)  # noqa: S102 - source holds only identifiers and ints; values are bound constants
        match: Matcher = namespace["match"]
        match.__arbiter_source__ = source  # type: ignore[attr-defined]
        return match


def native_matcher(point: PointSpec) -> Matcher:
    return _Builder(point).build()

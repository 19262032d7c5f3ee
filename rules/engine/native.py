"""The default backend: each point becomes one generated Python function.

A generated function evaluates every rule with straight-line boolean expressions over local
variables, which measured about twice as fast as walking a list of closures at 200 rules. Rules that
need a keyword list sit under one bitmask test per list, so a request that hit no list skips them all.
Each condition writes its own expression (``ConditionSpec.native``). Only identifiers, integer literals
and operators are written into the source; every value from the configuration (terms, outcomes,
numbers, fact names, patterns) is bound as a named constant in the function's globals, so nothing an
operator types can change the generated code. The builder refuses an expression holding anything else
(a quote, a backslash, a colon, a bracket, a line break), so a kind that wrote a value into the source
would fail to compile instead.
"""

from __future__ import annotations

import re
from typing import Any

from rules.engine.clock import time_of_day, zone
from rules.engine.compiler import CompileError, Matcher
from rules.engine.model import ConditionSpec, PointSpec, RuleSpec
from rules.engine.request import NO_SESSION

# What a condition's expression may hold: names, integers, parentheses, dots and operators. No text
# literal, comment, lambda, subscript or second statement can be written with these characters.
_EXPRESSION = re.compile(r"[A-Za-z0-9_ ().<>=!&|+\-*%~^,]*")


class _Builder:
    def __init__(self, point: PointSpec) -> None:
        self._point = point
        self.consts: dict[str, Any] = {"_time_of_day": time_of_day, "_no_session": NO_SESSION}
        self.prelude: list[str] = []
        self.facts: dict[str, str] = {}
        self.zones: dict[str, str] = {}
        self.session_fields: dict[str, str] = {}

    @property
    def point(self) -> PointSpec:
        return self._point

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

    def time_of_day_var(self, tz: str) -> str:
        if tz not in self.zones:
            var = f"t{len(self.zones)}"
            self.zones[tz] = var
            zone(tz)  # fail at compile time, not on a request, if the zone is unknown
            self.prelude.append(f"    {var} = _time_of_day(now, {self.const(tz)})")
        return self.zones[tz]

    def session_field_var(self, name: str) -> str:
        if name not in self.session_fields:
            var = f"g{len(self.session_fields)}"
            self.session_fields[name] = var
            self.prelude.append(f"    {var} = sess.fields.get({self.const(name)})")
        return self.session_fields[name]

    def condition(self, c: ConditionSpec) -> str:
        expression = c.native(self)
        if not _EXPRESSION.fullmatch(expression):
            raise CompileError(f"point {self._point.key}: the {c.kind} condition wrote a value into the source")
        return expression

    @staticmethod
    def gate(rule: RuleSpec) -> int:
        """Keyword bits of which at least one must have hit for ``rule`` to hold (0: no such bits).

        Most rules test a keyword list; in a request that hit none of a rule's lists the rule cannot
        hold, so it is grouped under one test of the bitmask instead of being tested on its own.
        """
        keyword_bits = [bit for c in rule.conditions if (bit := c.keyword_bit())]
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
        for index, rule in enumerate(self._point.rules):
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
        lines = ["def match(mask, cand, conf, facts, state, now, sess=_no_session):", "    out = []"]
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
        code = compile(source, f"<arbiter point {self._point.key}>", "exec")
        exec(code, namespace)  # noqa: S102 - source holds only identifiers and ints; values are bound constants
        match: Matcher = namespace["match"]
        match.__arbiter_source__ = source  # type: ignore[attr-defined]
        return match


def native_matcher(point: PointSpec) -> Matcher:
    return _Builder(point).build()

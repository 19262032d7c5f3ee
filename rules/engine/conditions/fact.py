"""``{fact: <name>, op: <op>, threshold: <key> | value: <literal>}`` — a fact compared with a number or a literal.

``op`` is one of ``< <= > >= == !=`` or ``in`` (the fact is one of a list of values; for a
``string_list`` fact, any of its items is). A fact the request did not send never holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, final

from rules.engine.conditions.base import (
    CompileContext,
    ConditionSpec,
    DurableTranslator,
    Explainer,
    Facts,
    Hits,
    NativeBuilder,
    PointView,
    Test,
    compared,
)

if TYPE_CHECKING:
    from rules.engine.request import Request


@final
@dataclass(frozen=True, slots=True)
class FactComparison(ConditionSpec):
    kind: ClassVar[str] = "fact"

    fact: str
    op: str
    value: Any  # a number, a text or a boolean; for ``in`` a tuple of them
    threshold_key: str = ""  # the threshold ``value`` was read from, if any
    fact_type: str = ""  # as the point declares it

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> FactComparison:
        fact, op = raw["fact"], raw["op"]
        fact_type = ctx.facts.get(fact, "")
        if "threshold" in raw:
            key = raw["threshold"]
            return FactComparison(fact, op, ctx.threshold(key), threshold_key=key, fact_type=fact_type)
        value = raw.get("value")
        if op == "in":
            value = tuple(value or ())
        return FactComparison(fact, op, value, fact_type=fact_type)

    def fact_read(self) -> str | None:
        return self.fact

    def holds(self, point: PointView, request: Request) -> bool:
        value = request.facts.get(self.fact)
        if value is None:
            return False
        op = self.op
        if op == "in":
            options = self.value
            if self.fact_type == "string_list":
                return any(v in options for v in value)
            return value in options
        return compared(op, value, self.value)

    def native(self, b: NativeBuilder) -> str:
        f = b.fact_var(self.fact)
        if self.op == "in":
            options = b.const(frozenset(self.value))
            if self.fact_type == "string_list":
                return f"({f} is not None and not {options}.isdisjoint({f}))"
            return f"({f} is not None and {f} in {options})"
        return f"({f} is not None and {f} {self.op} {b.const(self.value)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        if self.op == "in":
            return [(t.computed(self),)]
        return [(t.compare_fact(self.fact, self.op, self.value),)]

    def explainer(self) -> Explainer:
        fact = self.fact
        head = f"{fact} "
        rhs = f"{self.threshold_key} {self.value:g}" if self.threshold_key else repr(self.value)
        tail = f" {self.op} {rhs}"

        def fact_value(_hits: Hits, facts: Facts, *_: Any) -> str:
            return f"{head}{facts.get(fact)!r}{tail}"

        return fact_value

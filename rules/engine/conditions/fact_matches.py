"""``fact_matches: {fact: <name>, pattern: <regular expression>}`` — a text fact matches a pattern.

The pattern is searched for in the fact's value, ignoring case, as a regex keyword term is searched
for in the input (anchor it with ``^`` and ``$`` to match the whole value); the value is taken as
sent, not normalised. Only a text can match: a missing fact, or a value of any other type, never does.
durable-rules' own regular expressions give wrong answers, so the durable backend has the match
computed in Python by ``holds``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, final

from rules.engine.conditions.base import (
    CompileContext,
    CompileError,
    ConditionSpec,
    DurableTranslator,
    Explainer,
    Facts,
    Hits,
    NativeBuilder,
    PointView,
    Test,
)

if TYPE_CHECKING:
    from rules.engine.request import Request


@final
@dataclass(frozen=True, slots=True)
class FactMatches(ConditionSpec):
    kind: ClassVar[str] = "fact_matches"

    fact: str
    pattern: str
    regex: re.Pattern[str] = field(compare=False)

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> FactMatches:
        spec = raw["fact_matches"]
        pattern = spec["pattern"]
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except (re.error, OverflowError, RecursionError) as exc:
            raise CompileError(f"fact_matches on {spec['fact']}: {pattern!r} does not compile ({exc})") from exc
        return FactMatches(fact=spec["fact"], pattern=pattern, regex=regex)

    def fact_read(self) -> str | None:
        return self.fact

    def holds(self, point: PointView, request: Request) -> bool:
        value = request.facts.get(self.fact)
        return isinstance(value, str) and self.regex.search(value) is not None

    def native(self, b: NativeBuilder) -> str:
        f = b.fact_var(self.fact)
        is_text, search = b.const(isinstance), b.const(self.regex.search)
        return f"({is_text}({f}, {b.const(str)}) and {search}({f}) is not None)"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        return [(t.computed(self),)]

    def explainer(self) -> Explainer:
        fact, tail = self.fact, f" matches /{self.pattern}/"

        def matched(_hits: Hits, facts: Facts, *_: Any) -> str:
            return f"{fact} {facts.get(fact)!r}{tail}"

        return matched

"""``input_contains: <list>`` — the input holds a term of a keyword list (``unless`` a weak-signal pattern
around it says otherwise: ``unless: [不是要投诉]``).

The scan of the input is shared by all of a point's conditions (``rules.engine.keywords``): a condition
only tests its list's bit in the scan's bitmask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, final

from rules.engine.conditions.base import (
    TRUE,
    CompileContext,
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
class InputContains(ConditionSpec):
    kind: ClassVar[str] = "input_contains"

    list_key: str
    list_bit: int
    # Weak-signal patterns: a hit of the list inside one of them does not count (``KeywordListSpec.unless``).
    # The scanner gives the list read with them a bit of its own, so every backend tests just that bit.
    unless: tuple[str, ...] = ()
    # ``unless_negated: true``: a hit its own clause negates (我不打算起诉) does not count either.
    unless_negated: bool = False

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> InputContains:
        key = raw["input_contains"]
        unless = tuple(raw.get("unless", ()))
        negated = bool(raw.get("unless_negated", False))
        return InputContains(
            list_key=key, list_bit=ctx.keyword_bit(key, unless, negated), unless=unless, unless_negated=negated
        )

    def holds(self, point: PointView, request: Request) -> bool:
        return bool(request.mask & (1 << self.list_bit))

    def native(self, b: NativeBuilder) -> str:
        return f"(mask & {1 << self.list_bit})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        return [(Test(t.keyword_field(self.list_bit), "==", TRUE),)]

    def explainer(self) -> Explainer:
        key, tail = self.list_key, f" (list {self.list_key})"

        def keyword(hits: Hits, _facts: Facts, *_: Any) -> str:
            terms = hits.get(key)
            return f"keyword {terms[0] if terms else '?'}{tail}"

        return keyword

    def keyword_bit(self) -> int:
        return 1 << self.list_bit

"""``candidate_not_in_whitelist: true`` — the LLM's candidate is not one the point lets it decide alone.

No candidate never holds.
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
)

if TYPE_CHECKING:
    from rules.engine.request import Request


@final
@dataclass(frozen=True, slots=True)
class CandidateNotInWhitelist(ConditionSpec):
    kind: ClassVar[str] = "candidate_not_in_whitelist"

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> CandidateNotInWhitelist:
        return CandidateNotInWhitelist()

    def holds(self, point: PointView, request: Request) -> bool:
        return request.candidate is not None and request.candidate not in point.whitelist

    def native(self, b: NativeBuilder) -> str:
        return f"(cand is not None and cand not in {b.const(b.point.whitelist)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        field = t.candidate_field()
        tests = tuple(Test(field, "!=", t.text(o, "outcome")) for o in sorted(t.point.whitelist))
        # With nothing to differ from, the test is only that a candidate was given.
        return [tests or (Test(field, "ex", "1"),)]

    def explainer(self) -> Explainer:
        def candidate(_hits: Hits, _facts: Facts, cand: str | None, *_: Any) -> str:
            return f"candidate {cand} not in the whitelist"

        return candidate

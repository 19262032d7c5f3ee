"""``candidate_in: [<outcome>, …]`` — the LLM's candidate is one of the outcomes. No candidate never holds."""

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
class CandidateIn(ConditionSpec):
    kind: ClassVar[str] = "candidate_in"

    outcomes: frozenset[str]

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> CandidateIn:
        return CandidateIn(outcomes=frozenset(raw["candidate_in"]))

    def holds(self, point: PointView, request: Request) -> bool:
        return request.candidate is not None and request.candidate in self.outcomes

    def native(self, b: NativeBuilder) -> str:
        return f"(cand is not None and cand in {b.const(self.outcomes)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        field = t.candidate_field()
        return [(Test(field, "==", t.text(o, "outcome")),) for o in sorted(self.outcomes)]

    def explainer(self) -> Explainer:
        tail = f" in {', '.join(sorted(self.outcomes))}"

        def candidate(_hits: Hits, _facts: Facts, cand: str | None, *_: Any) -> str:
            return f"candidate {cand}{tail}"

        return candidate

"""``candidate_not_in: [<outcome>, …]`` — the LLM's candidate is none of the outcomes. No candidate never holds."""

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
class CandidateNotIn(ConditionSpec):
    kind: ClassVar[str] = "candidate_not_in"

    outcomes: frozenset[str]

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> CandidateNotIn:
        return CandidateNotIn(outcomes=frozenset(raw["candidate_not_in"]))

    def holds(self, point: PointView, request: Request) -> bool:
        return request.candidate is not None and request.candidate not in self.outcomes

    def native(self, b: NativeBuilder) -> str:
        return f"(cand is not None and cand not in {b.const(self.outcomes)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        field = t.candidate_field()
        tests = tuple(Test(field, "!=", t.text(o, "outcome")) for o in sorted(self.outcomes))
        # With nothing to differ from, the test is only that a candidate was given.
        return [tests or (Test(field, "ex", "1"),)]

    def explainer(self) -> Explainer:
        tail = f" not in {', '.join(sorted(self.outcomes))}"

        def candidate(_hits: Hits, _facts: Facts, cand: str | None, *_: Any) -> str:
            return f"candidate {cand}{tail}"

        return candidate

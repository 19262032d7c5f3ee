"""``candidate_confidence_below: <threshold>`` — the LLM's confidence is below a threshold. No candidate never holds."""

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
class CandidateConfidenceBelow(ConditionSpec):
    kind: ClassVar[str] = "candidate_confidence_below"

    threshold_key: str
    value: float

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> CandidateConfidenceBelow:
        key = raw["candidate_confidence_below"]
        return CandidateConfidenceBelow(threshold_key=key, value=ctx.threshold(key))

    def holds(self, point: PointView, request: Request) -> bool:
        return request.candidate is not None and request.confidence is not None and request.confidence < self.value

    def native(self, b: NativeBuilder) -> str:
        return f"(cand is not None and conf is not None and conf < {b.const(self.value)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        return [(Test(t.confidence_field(), "<", t.number(self.value, "threshold")),)]

    def explainer(self) -> Explainer:
        tail = f" below {self.threshold_key} {self.value:g}"

        def confidence(_hits: Hits, _facts: Facts, _cand: str | None, conf: float | None, *_: Any) -> str:
            return f"confidence {conf:.2f}{tail}"

        return confidence

    def confidence_floor(self) -> tuple[str, float] | None:
        return self.threshold_key, float(self.value)

"""``session_state_in: [<state>, …]`` — the session the request belongs to is in one of the states."""

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
class SessionStateIn(ConditionSpec):
    kind: ClassVar[str] = "session_state_in"

    states: frozenset[str]

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> SessionStateIn:
        return SessionStateIn(states=frozenset(raw["session_state_in"]))

    def holds(self, point: PointView, request: Request) -> bool:
        return request.state is not None and request.state in self.states

    def native(self, b: NativeBuilder) -> str:
        return f"(state in {b.const(self.states)})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        field = t.state_field()
        return [(Test(field, "==", t.text(s, "session state")),) for s in sorted(self.states)]

    def explainer(self) -> Explainer:
        def session_state(
            _hits: Hits, _facts: Facts, _cand: str | None, _conf: float | None, state: str | None, *_: Any
        ) -> str:
            return f"session state {state}"

        return session_state

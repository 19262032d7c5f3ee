"""``{session_keyword_seen: <keyword list>, last: N}`` — the keyword list hit in at least one of the
session's last ``N`` logged decisions (seed 001 §4.2: "has the user used complaint keywords before").

Read from what the decision log already records of each decision (``DecisionRecord.keyword_hits``, by
list key), ``N`` of them at most (1 … ``MAX_LAST``, ``DEFAULT_LAST`` when not given), newest first; the
decision being made is not one of them (combine with ``input_contains`` for this turn). A list is seen
in a decision when that decision's point scanned for it and it hit, whichever point that was. A request
without a session, or a session with no decisions yet, has seen nothing.
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
    Fixed,
    NativeBuilder,
    PointView,
    Test,
)

if TYPE_CHECKING:
    from rules.engine.request import Request, SessionView

DEFAULT_LAST = 5
MAX_LAST = 50


def _seen(session: SessionView, list_key: str, last: int) -> bool:
    return any(list_key in hit for hit in session.recent[:last])


@final
@dataclass(frozen=True, slots=True)
class SessionKeywordSeen(ConditionSpec):
    kind: ClassVar[str] = "session_keyword_seen"

    list_key: str
    last: int = DEFAULT_LAST

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> SessionKeywordSeen:
        return SessionKeywordSeen(list_key=raw["session_keyword_seen"], last=int(raw.get("last", DEFAULT_LAST)))

    def history_depth(self) -> int:
        return self.last

    def holds(self, point: PointView, request: Request) -> bool:
        return any(self.list_key in hit for hit in request.session.recent[: self.last])

    def native(self, b: NativeBuilder) -> str:
        return f"{b.const(_seen)}(sess, {b.const(self.list_key)}, {self.last})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        return [(t.computed(self),)]

    def explainer(self) -> Explainer:
        words = f"keyword list {self.list_key} seen in the last {self.last} decisions of the session"
        if self.last == 1:
            words = f"keyword list {self.list_key} seen in the session's last decision"

        return Fixed(words)

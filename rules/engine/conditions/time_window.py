"""``time_window: {from: HH:MM, to: HH:MM, tz: <IANA zone>}`` — the local time of day is within a window.

A window whose end is before its start spans midnight (22:00–06:00).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, final

from rules.engine.clock import time_of_day
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
    from rules.engine.request import Request


def _seconds(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.append(0)
    hours, minutes, seconds = parts[:3]
    return hours * 3600 + minutes * 60 + seconds


def _hhmm(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


@final
@dataclass(frozen=True, slots=True)
class TimeWindow(ConditionSpec):
    kind: ClassVar[str] = "time_window"

    start: int  # seconds after local midnight
    end: int
    tz: str

    @classmethod
    def read(cls, raw: Mapping[str, Any], ctx: CompileContext) -> TimeWindow:
        window = raw["time_window"]
        return TimeWindow(start=_seconds(window["from"]), end=_seconds(window["to"]), tz=window["tz"])

    def holds(self, point: PointView, request: Request) -> bool:
        seconds = time_of_day(request.now, self.tz)
        if self.start < self.end:
            return self.start <= seconds < self.end
        return seconds >= self.start or seconds < self.end

    def native(self, b: NativeBuilder) -> str:
        t = b.time_of_day_var(self.tz)
        start, end = b.const(self.start), b.const(self.end)
        if self.start < self.end:
            return f"({start} <= {t} < {end})"
        return f"({t} >= {start} or {t} < {end})"

    def durable(self, t: DurableTranslator) -> list[tuple[Test, ...]]:
        field = t.time_of_day_field(self.tz)
        start, end = str(int(self.start)), str(int(self.end))
        if self.start < self.end:
            return [(Test(field, ">=", start), Test(field, "<", end))]
        # Across midnight: the two alternatives never hold together.
        return [(Test(field, ">=", start),), (Test(field, "<", end),)]

    def reads_clock(self) -> bool:
        return True

    def explainer(self) -> Explainer:
        return Fixed(f"time within {_hhmm(self.start)}–{_hhmm(self.end)} {self.tz}")

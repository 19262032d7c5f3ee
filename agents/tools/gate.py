"""Each tool's circuit breaker and concurrency limit, shared by every worker and agent instance.

INTERFACE (the tool-call services call only these; the implementation behind them is this module's):

- ``gate_enter(tool, *, breaker, max_concurrent, lease, deadline_ms) -> Permit`` — called last in a
  tool-call check, just before the attempt is written. Raises ``CircuitOpen`` (``extra["retry_after_ms"]``)
  or ``ToolConcurrency``. ``lease`` names the attempt (``"<call pk>:<attempt>"``); it holds a concurrency
  slot until ``gate_leave`` or until ``deadline_ms`` (epoch ms) has passed.
- ``gate_leave(tool, *, lease)`` — the attempt's result came: its slot is free.
- ``breaker_record(tool, *, breaker, ok) -> str`` — an attempt's outcome; returns the breaker's state after.
- ``breaker_state(tool, *, breaker) -> str`` — "closed" | "open" | "half_open" (no breaker: "closed").

STUB: lets everything through until the breaker and limit are built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


@dataclass(frozen=True, slots=True)
class Permit:
    state: str  # the breaker's state the attempt starts under: closed, or half_open for a trial call


def gate_enter(
    tool: str, *, breaker: Mapping[str, Any] | None, max_concurrent: int | None, lease: str, deadline_ms: int
) -> Permit:
    return Permit(CLOSED)


def gate_leave(tool: str, *, lease: str) -> None:
    return None


def breaker_record(tool: str, *, breaker: Mapping[str, Any] | None, ok: bool) -> str:
    return CLOSED


def breaker_state(tool: str, *, breaker: Mapping[str, Any] | None) -> str:
    return CLOSED

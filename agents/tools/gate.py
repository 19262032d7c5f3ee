"""Each tool's circuit breaker and concurrency limit, shared by every worker and agent instance.

INTERFACE (the tool-call services call only these):

- ``gate_enter(tool, *, breaker, max_concurrent, lease, deadline_ms) -> Permit`` — called last in a
  tool-call check, just before the attempt is written. Raises ``CircuitOpen`` (``extra["retry_after_ms"]``)
  or ``ToolConcurrency``. ``lease`` names the attempt (``"<call pk>:<attempt>"``); it holds a concurrency
  slot until ``gate_leave`` or until ``deadline_ms`` (epoch ms) has passed.
- ``gate_leave(tool, *, lease)`` — the attempt's result came: its slot is free.
- ``breaker_record(tool, *, breaker, ok) -> str`` — an attempt's outcome; returns the breaker's state after.
  ``ok=None``: a half-open trial whose failure the contract's ``ignore_codes`` ignore — its slot is given
  back, nothing counted (an ignored failure of any other attempt is not recorded at all).
- ``breaker_state(tool, *, breaker) -> str`` — "closed" | "open" | "half_open" (no breaker: "closed").

``breaker`` is the contract's ``circuit_breaker`` mapping or None; ``max_concurrent`` None is no limit.
A tool with neither is not looked up at all (no round trip, no lock).

With the database store, ``gate_enter`` writes in the caller's transaction: if the caller rolls back, the
lease and a trial call taken are given back with it. Redis is not part of that transaction: a caller
that rolls back after ``gate_enter`` let it through should call ``gate_leave`` (else the slot stays
taken until the deadline; a trial taken then counts as unanswered at its deadline). The state machine is
``agents.tools.breaker_machine``; where it lives (Redis or the database) ``agents.tools.breaker_store``.
People open and close breakers through ``agents.tools.breaker_services``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from agents.tools.breaker_backend import store
from agents.tools.breaker_machine import CIRCUIT_OPEN, CLOSED, HALF_OPEN, OPEN, Breaker, Outcome
from agents.tools.errors import CircuitOpen, ToolConcurrency
from agents.webhooks.emit import webhook_event
from agents.webhooks.models import EventKind
from decision_service import metrics

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "Permit", "breaker_record", "breaker_state", "gate_enter", "gate_leave"]


@dataclass(frozen=True, slots=True)
class Permit:
    state: str  # the breaker's state the attempt starts under: closed, or half_open for a trial call


def state_changed(tool: str, outcome: Outcome) -> None:
    """The breaker gauge follows each change, set by whichever process made it; an opening or a closing is
    told to the webhook subscriptions that want it (in the caller's transaction, when there is one)."""
    if outcome.before == outcome.after:
        return
    metrics.tool_breaker_state(tool=tool, state=outcome.after)
    kind = {OPEN: EventKind.BREAKER_OPENED, CLOSED: EventKind.BREAKER_CLOSED}.get(outcome.after)
    if kind is not None:
        data = {"tool": tool, "from_state": outcome.before, "state": outcome.after, "at": timezone.now().isoformat()}
        webhook_event(kind, data=data)


def gate_enter(
    tool: str, *, breaker: Mapping[str, Any] | None, max_concurrent: int | None, lease: str, deadline_ms: int
) -> Permit:
    if breaker is None and max_concurrent is None:
        return Permit(CLOSED)
    outcome = store().enter(
        tool, breaker=Breaker.of(breaker), max_concurrent=max_concurrent, lease=lease, deadline_ms=deadline_ms
    )
    state_changed(tool, outcome)
    if outcome.refused == CIRCUIT_OPEN:
        raise CircuitOpen(
            f"The circuit breaker of {tool} is open; try again in {outcome.retry_after_ms} ms.",
            extra={"retry_after_ms": outcome.retry_after_ms},
        )
    if outcome.refused:
        raise ToolConcurrency(
            f"{tool} already has {max_concurrent} calls in flight.",
            extra={"retry_after_ms": outcome.retry_after_ms},
        )
    return Permit(outcome.after)


def gate_leave(tool: str, *, lease: str) -> None:
    store().leave(tool, lease=lease)


def breaker_record(tool: str, *, breaker: Mapping[str, Any] | None, ok: bool | None) -> str:
    if breaker is None:
        return CLOSED
    outcome = store().record(tool, breaker=Breaker.of(breaker), ok=ok)
    state_changed(tool, outcome)
    return outcome.after


def breaker_state(tool: str, *, breaker: Mapping[str, Any] | None) -> str:
    if breaker is None:
        return CLOSED
    return store().snapshot(tool, breaker=Breaker.of(breaker)).state

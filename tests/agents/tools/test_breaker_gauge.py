"""The breaker state gauge follows each change of a tool's breaker, whichever way it happens."""

from __future__ import annotations

from prometheus_client import REGISTRY

from agents.tools.gate import breaker_record, gate_enter
from tests.support.breakers import tool_name, wall_deadline

BREAKER = {"failure_threshold": 2, "window_s": 60, "half_open_after_ms": 0, "trial_calls": 1}


def gauge(tool: str) -> float | None:
    return REGISTRY.get_sample_value("arbiter_tool_breaker_state", {"tool": tool})


def test_the_gauge_follows_the_breaker(db):
    tool = tool_name("gauge")
    breaker_record(tool, breaker=BREAKER, ok=False)
    assert gauge(tool) is None  # no change yet: nothing set
    breaker_record(tool, breaker=BREAKER, ok=False)
    assert gauge(tool) == 2
    gate_enter(tool, breaker=BREAKER, max_concurrent=None, lease="1:1", deadline_ms=wall_deadline(5))
    assert gauge(tool) == 1
    breaker_record(tool, breaker=BREAKER, ok=True)
    assert gauge(tool) == 0

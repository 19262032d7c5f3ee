"""The plain, obviously-correct reading of each condition.

It is the reference the generated code is tested against, and it explains a decision after the fact
(which alternatives of a winning "any" rule held). It is not on the hot path.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rules.engine.model import ConditionSpec, PointSpec, RuleSpec

if TYPE_CHECKING:
    from rules.engine.compiler import Matcher


@lru_cache(maxsize=256)
def zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def time_of_day(now: dt.datetime, tz: str) -> int:
    local = now.astimezone(zone(tz))
    return local.hour * 3600 + local.minute * 60 + local.second


def in_window(seconds: int, start: int, end: int) -> bool:
    # A window whose end is before its start spans midnight (22:00–06:00).
    if start < end:
        return start <= seconds < end
    return seconds >= start or seconds < end


def fact_holds(c: ConditionSpec, facts: Mapping[str, Any], fact_type: str | None) -> bool:
    value = facts.get(c.fact)
    if value is None:
        return False
    op = c.op
    if op == "in":
        options = c.value
        if fact_type == "string_list":
            return any(v in options for v in value)
        return value in options
    if op == "==":
        return bool(value == c.value)
    if op == "!=":
        return bool(value != c.value)
    if op == "<":
        return bool(value < c.value)
    if op == "<=":
        return bool(value <= c.value)
    if op == ">":
        return bool(value > c.value)
    if op == ">=":
        return bool(value >= c.value)
    raise ValueError(f"unknown operator {op!r}")


def condition_holds(
    c: ConditionSpec,
    point: PointSpec,
    *,
    mask: int,
    candidate: str | None,
    confidence: float | None,
    facts: Mapping[str, Any],
    state: str | None,
    now: dt.datetime,
) -> bool:
    kind = c.kind
    if kind == "input_contains":
        return bool(mask & (1 << c.list_bit))
    if kind == "fact":
        return fact_holds(c, facts, point.facts.get(c.fact))
    if kind == "candidate_in":
        return candidate is not None and candidate in c.outcomes
    if kind == "candidate_not_in":
        return candidate is not None and candidate not in c.outcomes
    if kind == "candidate_not_in_whitelist":
        return candidate is not None and candidate not in point.whitelist
    if kind == "candidate_confidence_below":
        return candidate is not None and confidence is not None and confidence < c.value
    if kind == "time_window":
        return in_window(time_of_day(now, c.tz), c.window_start, c.window_end)
    if kind == "session_state_in":
        return state is not None and state in c.states
    raise ValueError(f"unknown condition kind {kind!r}")


def rule_in_effect(rule: RuleSpec, now: dt.datetime) -> bool:
    if rule.effective_from is not None and now < rule.effective_from:
        return False
    return not (rule.effective_until is not None and now >= rule.effective_until)


def rule_holds(rule: RuleSpec, point: PointSpec, **ctx: Any) -> bool:
    if not rule_in_effect(rule, ctx["now"]):
        return False
    if not rule.conditions:
        return True  # a rule without conditions is a catch-all
    results = (condition_holds(c, point, **ctx) for c in rule.conditions)
    return all(results) if rule.combinator == "all" else any(results)


def interpreted_matcher(point: PointSpec) -> Matcher:
    """A matcher with the same signature as generated ones, for tests and as a reference backend."""

    def match(
        mask: int,
        candidate: str | None,
        confidence: float | None,
        facts: Mapping[str, Any],
        state: str | None,
        now: dt.datetime,
    ) -> tuple[int, ...]:
        ctx = {
            "mask": mask,
            "candidate": candidate,
            "confidence": confidence,
            "facts": facts,
            "state": state,
            "now": now,
        }
        return tuple(i for i, rule in enumerate(point.rules) if rule_holds(rule, point, **ctx))

    return match

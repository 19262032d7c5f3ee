"""The plain, obviously-correct reading of each rule: every condition's own ``holds``.

It is the reference the generated code is tested against, and it explains a decision after the fact
(which alternatives of a winning "any" rule held). It is not on the hot path.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rules.engine.model import PointSpec, Request, RuleSpec
from rules.engine.request import NO_SESSION, SessionView

if TYPE_CHECKING:
    from rules.engine.compiler import Matcher


def rule_in_effect(rule: RuleSpec, now: dt.datetime) -> bool:
    if rule.effective_from is not None and now < rule.effective_from:
        return False
    return not (rule.effective_until is not None and now >= rule.effective_until)


def rule_holds(rule: RuleSpec, point: PointSpec, request: Request) -> bool:
    if not rule_in_effect(rule, request.now):
        return False
    if not rule.conditions:
        return True  # a rule without conditions is a catch-all
    results = (c.holds(point, request) for c in rule.conditions)
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
        session: SessionView = NO_SESSION,
    ) -> tuple[int, ...]:
        request = Request(mask, candidate, confidence, facts, state, now, session)
        return tuple(i for i, rule in enumerate(point.rules) if rule_holds(rule, point, request))

    return match

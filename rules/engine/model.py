"""The engine's data: compiled specs (frozen, built once per revision) and the decisions it returns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

# Defined with the kinds of condition (rules.engine.conditions), and part of the engine's data.
from rules.engine.conditions.base import CompileError as CompileError
from rules.engine.conditions.base import ConditionSpec as ConditionSpec

# In a module of its own so that the kinds of condition can read it without importing this one.
from rules.engine.request import Request as Request

RuledBy = Literal["hard_rule", "llm_candidate", "default"]

HARD_RULE: RuledBy = "hard_rule"
LLM_CANDIDATE: RuledBy = "llm_candidate"
DEFAULT: RuledBy = "default"

_NO_HITS: Mapping[str, tuple[str, ...]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the agent's LLM proposed."""

    decision: str
    confidence: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RuleSpec:
    key: str
    description: str
    priority: int
    category: str
    combinator: str  # "all" | "any"
    outcome: str
    shadow: bool
    effective_from: dt.datetime | None
    effective_until: dt.datetime | None
    conditions: tuple[ConditionSpec, ...]


@dataclass(frozen=True, slots=True)
class PointSpec:
    key: str
    name: str
    description: str
    facts: Mapping[str, str]
    outcomes: frozenset[str]
    whitelist: frozenset[str]
    default_outcome: str
    ask_when_no_candidate: bool
    rules: tuple[RuleSpec, ...]  # enforce and shadow rules only, in priority order (ties by key)
    keyword_lists: tuple[str, ...]  # bit i of a scan result ↔ keyword_lists[i]
    # How a decision moves a session (used when the agent decides with apply=true), not by the engine.
    machine: str = ""
    state_map: Mapping[str, str] = field(default_factory=dict)
    fallback_state: str = ""
    # The ``unless`` patterns each bit's list is read with (parallel to ``keyword_lists``; () for none).
    keyword_unless: tuple[tuple[str, ...], ...] = ()
    # Whether each bit's list drops hits their clause negates (``unless_negated``; parallel, () for none).
    keyword_negated: tuple[bool, ...] = ()

    def reads_clock(self) -> bool:
        """Whether a decision here can depend on ``now``: a rule with an effective period or a condition on
        the time of day. A replay of a point that does not need no timestamp per logged request."""
        return any(
            r.effective_from is not None or r.effective_until is not None or any(c.reads_clock() for c in r.conditions)
            for r in self.rules
        )

    def confidence_floor(self) -> tuple[str, float] | None:
        """The threshold a candidate's confidence is first judged by (key, value), if any rule does."""
        for rule in self.rules:
            if rule.shadow:
                continue
            for c in rule.conditions:
                floor = c.confidence_floor()
                if floor is not None:
                    return floor
        return None


@dataclass(frozen=True, slots=True)
class MatchedRule:
    key: str
    priority: int
    category: str
    outcome: str
    shadow: bool


class Decision(NamedTuple):
    """What the engine answers for one request. Pure data: the same inputs always give the same one.

    Immutable like the specs, but a named tuple rather than a frozen dataclass: one is built on every
    request, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) measured ~2 µs,
    a named tuple built positionally ~0.4 µs.
    """

    point: str
    decision: str | None
    ruled_by: RuledBy | None
    rule: MatchedRule | None
    matched_rules: tuple[MatchedRule, ...]
    candidate: Candidate | None
    overridden: bool
    needs_candidate: bool
    reason: str
    keyword_hits: Mapping[str, tuple[str, ...]] = _NO_HITS
    candidate_outside_outcomes: bool = False

    def as_dict(self) -> dict[str, Any]:
        def rule_dict(r: MatchedRule) -> dict[str, Any]:
            return {
                "key": r.key,
                "priority": r.priority,
                "category": r.category,
                "outcome": r.outcome,
                "shadow": r.shadow,
            }

        return {
            "point": self.point,
            "decision": self.decision,
            "ruled_by": self.ruled_by,
            "rule": rule_dict(self.rule) if self.rule else None,
            "matched_rules": [rule_dict(r) for r in self.matched_rules],
            "candidate": (
                {
                    "decision": self.candidate.decision,
                    "confidence": self.candidate.confidence,
                    "reason": self.candidate.reason,
                }
                if self.candidate
                else None
            ),
            "overridden": self.overridden,
            "needs_candidate": self.needs_candidate,
            "reason": self.reason,
            "keyword_hits": {k: list(v) for k, v in self.keyword_hits.items()},
        }

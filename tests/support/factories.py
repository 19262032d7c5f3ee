"""Small builders for configuration records, written through the services like real users do."""

from __future__ import annotations

from decimal import Decimal

from rules.config import records
from rules.models import Condition, DecisionPoint, KeywordList, Rule, Threshold


def threshold(key="min_confidence", value="0.65", lo="0", hi="1", actor=None, **kw) -> Threshold:
    return records.threshold_save(
        threshold=Threshold(key=key, value=Decimal(value), min_value=Decimal(lo), max_value=Decimal(hi), **kw),
        actor=actor,
        reason="test setup",
    )


def keyword_list(key="high_risk", terms=("投诉", "12315"), actor=None, **kw) -> KeywordList:
    kl = records.keyword_list_save(keyword_list=KeywordList(key=key, **kw), actor=actor, reason="test setup")
    records.keyword_terms_add(keyword_list=kl, terms=list(terms), actor=actor, reason="test setup")
    return kl


def point(key="intent_routing", outcomes=("human_handoff", "general_query", "intent_clarify"), actor=None, **kw):
    kw.setdefault("default_outcome", outcomes[-1])
    return records.point_save(point=DecisionPoint(key=key, outcomes=list(outcomes), **kw), actor=actor, reason="t")


def rule(point_, key="r", outcome="human_handoff", priority=10, category="compliance", actor=None, **kw) -> Rule:
    return records.rule_save(
        rule=Rule(point=point_, key=key, outcome=outcome, priority=priority, category=category, **kw),
        actor=actor,
        reason="test setup",
    )


def condition(rule_, actor=None, **kw) -> Condition:
    return records.condition_save(condition=Condition(rule=rule_, **kw), actor=actor, reason="test setup")

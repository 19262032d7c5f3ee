from rules.models.config import (
    Condition,
    ConditionKind,
    DecisionPoint,
    FactType,
    KeywordList,
    KeywordTerm,
    MatchMode,
    NoCandidatePolicy,
    Operator,
    Rule,
    RuleCategory,
    RuleCombinator,
    RuleMode,
    Threshold,
)
from rules.models.decisions import CandidateRequestCount, DecisionRecord, RuledBy
from rules.models.machines import StateMachine
from rules.models.revisions import ConfigRevision

__all__ = [
    "CandidateRequestCount",
    "Condition",
    "ConditionKind",
    "ConfigRevision",
    "DecisionPoint",
    "DecisionRecord",
    "FactType",
    "KeywordList",
    "KeywordTerm",
    "MatchMode",
    "NoCandidatePolicy",
    "Operator",
    "Rule",
    "RuleCategory",
    "RuleCombinator",
    "RuleMode",
    "RuledBy",
    "StateMachine",
    "Threshold",
]

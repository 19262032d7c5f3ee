"""Every model of the rules app, imported from its room: Django loads models from this module."""

from rules.config.choices import (
    ConditionKind,
    FactType,
    MatchMode,
    NoCandidatePolicy,
    Operator,
    RuleCategory,
    RuleCombinator,
    RuleMode,
)
from rules.config.models.machines import StateMachine
from rules.config.models.mcp_servers import McpAuthKind, McpServer
from rules.config.models.points import (
    Condition,
    DecisionPoint,
    KeywordList,
    KeywordTerm,
    Rule,
    Threshold,
)
from rules.config.models.revisions import ConfigRevision
from rules.config.models.tools import ToolContract, ToolRisk
from rules.decisions.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord, RuledBy
from rules.governance.models.change_requests import (
    OPEN_STATES,
    ChangeRequest,
    ChangeRequestApproval,
    ChangeRequestEvent,
    ChangeRequestRisk,
    ChangeRequestState,
    ImpactStatus,
    RegressionCase,
)
from rules.governance.models.tokens import StaffToken
from rules.reports.models import DecisionMapSnapshot, DecisionRollup, DecisionRollupDay, SnapshotTrigger

__all__ = [
    "OPEN_STATES",
    "CandidateRequestCount",
    "ChangeRequest",
    "ChangeRequestApproval",
    "ChangeRequestEvent",
    "ChangeRequestRisk",
    "ChangeRequestState",
    "Condition",
    "ConditionKind",
    "ConfigRevision",
    "DecisionIdempotencyKey",
    "DecisionMapSnapshot",
    "DecisionPoint",
    "DecisionRecord",
    "DecisionRollup",
    "DecisionRollupDay",
    "FactType",
    "ImpactStatus",
    "KeywordList",
    "KeywordTerm",
    "MatchMode",
    "McpAuthKind",
    "McpServer",
    "NoCandidatePolicy",
    "Operator",
    "RegressionCase",
    "Rule",
    "RuleCategory",
    "RuleCombinator",
    "RuleMode",
    "RuledBy",
    "SnapshotTrigger",
    "StaffToken",
    "StateMachine",
    "Threshold",
    "ToolContract",
    "ToolRisk",
]

"""The closed sets of values configuration records choose from (Django ``TextChoices``: enums with
translatable labels, no database). Kept apart from the models so that the pure document package
(``rules.config.document``) can check a YAML file against them without importing a model."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from rules.config.condition_kinds import ADAPTERS


class FactType(models.TextChoices):
    STRING = "string", _("text")
    NUMBER = "number", _("number")
    INTEGER = "integer", _("whole number")
    BOOLEAN = "boolean", _("yes/no")
    STRING_LIST = "string_list", _("list of texts")


class NoCandidatePolicy(models.TextChoices):
    ASK = "ask", _("ask the agent for an LLM candidate")
    DEFAULT = "default", _("answer the default outcome")


class RuleCategory(models.TextChoices):
    COMPLIANCE = "compliance", _("compliance")
    RISK = "risk", _("risk")
    BUSINESS = "business", _("business")
    QUALITY = "quality", _("quality")


HIGH_RISK_CATEGORIES = frozenset({RuleCategory.COMPLIANCE, RuleCategory.RISK})


class RuleCombinator(models.TextChoices):
    ALL = "all", _("all conditions hold")
    ANY = "any", _("any condition holds")


class RuleMode(models.TextChoices):
    ENFORCE = "enforce", _("enforce (decides)")
    SHADOW = "shadow", _("shadow (recorded, never decides)")
    OFF = "off", _("off")


class MatchMode(models.TextChoices):
    SUBSTRING = "substring", _("substring")
    WORD = "word", _("whole word")
    SEGMENTED = "segmented", _("whole word, Chinese segmented")
    REGEX = "regex", _("regular expression")


# The kinds of condition are declared once, each in its own module (rules/config/condition_kinds/<kind>.py).
ConditionKind = models.TextChoices(  # type: ignore[call-overload]
    "ConditionKind", [(kind.upper(), (kind, a.label)) for kind, a in ADAPTERS.items()]
)


class Operator(models.TextChoices):
    LT = "<", "<"
    LE = "<=", "<="
    GT = ">", ">"
    GE = ">=", ">="
    EQ = "==", "=="
    NE = "!=", "!="
    IN = "in", "in"
    MATCHES = "matches", _("matches")  # a session field's pattern (session_field); facts use fact_matches


__all__ = [
    "HIGH_RISK_CATEGORIES",
    "ConditionKind",
    "FactType",
    "MatchMode",
    "NoCandidatePolicy",
    "Operator",
    "RuleCategory",
    "RuleCombinator",
    "RuleMode",
]

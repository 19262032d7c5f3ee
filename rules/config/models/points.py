"""Configuration records operations staff own: decision points, rules, their conditions, keyword lists
(thresholds are in ``thresholds``, the shared field helpers in ``fields``).

Every model here is audited with django-simple-history. Invariants that a database can hold are
constraints; the rest lives in ``clean()`` so that services (``full_clean``) and admin forms refuse
the same things with the same messages. Writes go through ``rules.config.records``, never ``save()``
directly: the services record who and why, and cut a new configuration revision.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.choices import (
    HIGH_RISK_CATEGORIES,
    ConditionKind,
    MatchMode,
    NoCandidatePolicy,
    Operator,
    RuleCategory,
    RuleCombinator,
    RuleMode,
)
from rules.config.condition_kinds import ADAPTERS, INPUTS, adapter
from rules.config.condition_kinds.base import PointView
from rules.config.models.fields import key_field, text_problems
from rules.config.models.keyword_options import KeywordEvasionOptions
from rules.config.models.thresholds import Threshold
from rules.config.validators import (
    key_list_problem,
    point_problems,
    rule_problems,
    term_problem,
)
from rules.engine.normalize import normalize_term


class KeywordList(KeywordEvasionOptions):
    """Named, normalised terms shared by many rules (its issue-21 evasion options: ``KeywordEvasionOptions``)."""

    key = key_field(_("Rules refer to the list by this key; it cannot change later."))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    match_mode = models.CharField(
        max_length=16, choices=MatchMode.choices, default=MatchMode.SUBSTRING, verbose_name=_("match mode")
    )
    # Keyword evasion: how CJK terms match. Both only take effect for substring and whole-word lists that
    # hold a CJK term (rules.engine.keywords), which is what "on by default for CJK lists" means.
    fold_traditional = models.BooleanField(
        _("fold Traditional to Simplified"),
        default=True,
        help_text=_(
            "Traditional characters match their Simplified form and back (投訴 hits 投诉). "
            "Only for lists holding Chinese terms; not for regular expressions."
        ),
    )
    ignore_cjk_gaps = models.BooleanField(
        _("ignore gaps between CJK characters"),
        default=True,
        help_text=_(
            "Spaces and punctuation between Chinese, Japanese or Korean characters are ignored "
            "(投 诉, 投-诉 and 投.诉 hit 投诉). Only for lists holding CJK terms; not for regular expressions."
        ),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("keyword list")
        verbose_name_plural = _("keyword lists")
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="keyword_list_key_unique"),
            models.CheckConstraint(condition=Q(match_mode__in=MatchMode.values), name="keyword_list_match_mode_valid"),
        ]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        if errors := text_problems(self):
            raise ValidationError(errors)


class KeywordTerm(models.Model):
    keyword_list = models.ForeignKey(
        KeywordList, on_delete=models.CASCADE, related_name="terms", verbose_name=_("keyword list")
    )
    term = models.CharField(
        max_length=200, help_text=_("Stored normalised (NFKC, case-folded)."), verbose_name=_("term")
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("keyword term")
        verbose_name_plural = _("keyword terms")
        ordering = ["keyword_list", "id"]
        constraints = [
            models.UniqueConstraint(fields=["keyword_list", "term"], name="keyword_term_unique_in_list"),
            models.CheckConstraint(condition=~Q(term=""), name="keyword_term_not_empty"),
        ]

    def __str__(self) -> str:
        return self.term

    def clean(self) -> None:
        mode = self.keyword_list.match_mode if self.keyword_list_id else MatchMode.SUBSTRING
        self.term = normalize_term(self.term or "", mode)
        if problem := term_problem(self.term, mode):
            raise ValidationError({"term": problem})
        if self.keyword_list_id is None:
            return
        clash = KeywordTerm.objects.filter(keyword_list_id=self.keyword_list_id, term=self.term)
        if self.pk:
            clash = clash.exclude(pk=self.pk)
        if clash.exists():
            raise ValidationError(
                {
                    "term": gettext("'%(term)s' is already in list %(list)s.")
                    % {"term": self.term, "list": self.keyword_list.key}
                }
            )


class DecisionPoint(models.Model):
    """One place in an agent's flow where something is decided."""

    key = key_field(_("Agents call the point by this key; it cannot change later."))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    facts = models.JSONField(
        default=dict,
        blank=True,
        help_text=_('Declared facts and their types, e.g. {"refund_amount": "number"}.'),
        verbose_name=_("facts"),
    )
    outcomes = models.JSONField(
        default=list, help_text=_("The only answers this point can give."), verbose_name=_("outcomes")
    )
    candidate_whitelist = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Outcomes an LLM may propose and have accepted."),
        verbose_name=_("candidate whitelist"),
    )
    default_outcome = models.CharField(
        max_length=64, help_text=_("What happens when nothing else decides."), verbose_name=_("default outcome")
    )
    no_candidate = models.CharField(
        max_length=16,
        choices=NoCandidatePolicy.choices,
        default=NoCandidatePolicy.ASK,
        help_text=_("When no rule decides and the agent sent no candidate."),
        verbose_name=_("no candidate"),
    )
    machine = models.CharField(
        max_length=64,
        blank=True,
        help_text=_("The state machine whose sessions this point moves (decide with apply=true)."),
        verbose_name=_("machine"),
    )
    state_map = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Outcome → the state a session moves to when it is decided."),
        verbose_name=_("state map"),
    )
    fallback_state = models.CharField(
        max_length=64,
        blank=True,
        help_text=_("Where a session goes when the machine does not allow the mapped move (seed 001: clarify)."),
        verbose_name=_("fallback state"),
    )
    mask_skip = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Built-in personal-data masks not to apply to this point's log (phone, email, id_card)."),
        verbose_name=_("mask skip"),
    )
    mask_patterns = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("More personal data to mask in this point's log: name → regular expression."),
        verbose_name=_("mask patterns"),
    )
    mask_fact_paths = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Facts whose values are always masked whole in this point's log (e.g. customer_phone)."),
        verbose_name=_("mask fact paths"),
    )
    mask_facts = models.BooleanField(
        default=True,
        help_text=_("Mask personal data in this point's facts in the log; off: facts are logged as sent."),
        verbose_name=_("mask facts"),
    )
    store_raw_output = models.BooleanField(
        default=False,
        help_text=_(
            "Keep the model's raw output (masked) in the log and in the runtime's trace events; "
            "off: the parsed candidate only."
        ),
        verbose_name=_("store raw model output"),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("decision point")
        verbose_name_plural = _("decision points")
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="decision_point_key_unique"),
            models.CheckConstraint(
                condition=Q(no_candidate__in=NoCandidatePolicy.values), name="decision_point_no_candidate_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def _machine_states(self) -> list[str] | None:
        if not self.machine:
            return None
        # By name, as a ForeignKey names a model: rules.config.models.machines imports this module.
        machines = apps.get_model("rules", "StateMachine")
        states: list[str] | None = machines.objects.filter(key=self.machine).values_list("states", flat=True).first()
        return states

    def _fact_reliance_problem(self, c: Condition) -> str | None:
        """What is wrong with a saved condition of this point under the facts the point now declares."""
        kind = adapter(c.kind)
        fact = kind.fact_of(c) if kind is not None else None
        if kind is None or fact is None:
            return None
        fact_type = self.facts.get(fact)
        if fact_type is None:
            return gettext("%(rule)s uses '%(fact)s', which would no longer be declared") % {
                "rule": c.rule.key,
                "fact": fact,
            }
        problem = kind.fact_type_problem(c, fact_type)
        return f"{c.rule.key}: {problem}" if problem else None

    def clean(self) -> None:
        errors = text_problems(self)
        errors.update(
            point_problems(
                facts=self.facts,
                outcomes=self.outcomes,
                candidate_whitelist=self.candidate_whitelist,
                default_outcome=self.default_outcome,
                mask_skip=self.mask_skip,
                mask_patterns=self.mask_patterns,
                mask_fact_paths=self.mask_fact_paths,
                mask_facts=self.mask_facts,
                machine=self.machine,
                state_map=self.state_map,
                fallback_state=self.fallback_state,
                machine_states=self._machine_states(),
            )
        )
        if key_list_problem(self.outcomes) or key_list_problem(self.candidate_whitelist):
            raise ValidationError(errors)  # what the rules rely on is checked against readable outcomes only
        outcomes = self.outcomes
        conditions = list(Condition.objects.filter(rule__point=self).select_related("rule")) if self.pk else []
        if conditions and "facts" not in errors and isinstance(self.facts, dict):
            fact_problems = [problem for c in conditions if (problem := self._fact_reliance_problem(c))]
            if fact_problems:
                errors["facts"] = gettext("Rules of this point rely on the facts: %(problems)s.") % {
                    "problems": "; ".join(sorted(fact_problems))
                }
        if self.pk:
            used = sorted(
                {r.outcome for r in self.rules.all() if r.outcome not in outcomes}
                | {
                    o
                    for c in conditions
                    if (kind := adapter(c.kind)) is not None
                    for o in kind.outcomes_used(c)
                    if o not in outcomes
                }
            )
            if used:
                errors["outcomes"] = gettext("Still used by rules of this point: %(outcomes)s.") % {
                    "outcomes": ", ".join(used)
                }
        if errors:
            raise ValidationError(errors)


class Rule(models.Model):
    point = models.ForeignKey(DecisionPoint, on_delete=models.CASCADE, related_name="rules", verbose_name=_("point"))
    key = key_field(_("Unique within the point; it cannot change later."))
    description = models.CharField(
        max_length=300, blank=True, help_text=_("What the rule is for, in words."), verbose_name=_("description")
    )
    priority = models.PositiveIntegerField(
        help_text=_("Lower number wins; ties are broken by key."), verbose_name=_("priority")
    )
    category = models.CharField(max_length=16, choices=RuleCategory.choices, verbose_name=_("category"))
    combinator = models.CharField(
        max_length=8, choices=RuleCombinator.choices, default=RuleCombinator.ALL, verbose_name=_("combinator")
    )
    outcome = models.CharField(max_length=64, verbose_name=_("outcome"))
    mode = models.CharField(max_length=16, choices=RuleMode.choices, default=RuleMode.ENFORCE, verbose_name=_("mode"))
    effective_from = models.DateTimeField(null=True, blank=True, verbose_name=_("effective from"))
    effective_until = models.DateTimeField(null=True, blank=True, verbose_name=_("effective until"))
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("rule")
        verbose_name_plural = _("rules")
        ordering = ["point", "priority", "key"]
        constraints = [
            models.UniqueConstraint(fields=["point", "key"], name="rule_key_unique_in_point"),
            models.CheckConstraint(condition=Q(priority__gte=0), name="rule_priority_non_negative"),
            models.CheckConstraint(condition=Q(category__in=RuleCategory.values), name="rule_category_valid"),
            models.CheckConstraint(condition=Q(combinator__in=RuleCombinator.values), name="rule_combinator_valid"),
            models.CheckConstraint(condition=Q(mode__in=RuleMode.values), name="rule_mode_valid"),
            models.CheckConstraint(
                condition=Q(effective_from__isnull=True)
                | Q(effective_until__isnull=True)
                | Q(effective_from__lt=F("effective_until")),
                name="rule_effective_range_ordered",
            ),
        ]
        indexes = [models.Index(fields=["point", "priority"], name="rule_point_priority_idx")]

    def __str__(self) -> str:
        return f"{self.point.key}.{self.key}" if self.point_id else self.key

    @property
    def is_high_risk(self) -> bool:
        return self.category in HIGH_RISK_CATEGORIES

    def clean(self) -> None:
        errors = text_problems(self)
        errors.update(
            rule_problems(
                outcome=self.outcome,
                outcomes=(self.point.outcomes or []) if self.point_id else None,
                point=self.point.key if self.point_id else "",
                effective_from=self.effective_from,
                effective_until=self.effective_until,
            )
        )
        if errors:
            raise ValidationError(errors)


class Condition(models.Model):
    """One structured test of a rule. Which fields matter depends on ``kind`` (``rules.config.condition_kinds``): the
    fields a kind does not use are emptied when a condition is saved, so a stale threshold or list
    reference left from an earlier kind can neither mislead nor block a delete."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="conditions", verbose_name=_("rule"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    kind = models.CharField(max_length=32, choices=ConditionKind.choices, verbose_name=_("kind"))
    keyword_list = models.ForeignKey(
        KeywordList,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="conditions",
        verbose_name=_("keyword list"),
    )
    threshold = models.ForeignKey(
        Threshold,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="conditions",
        verbose_name=_("threshold"),
    )
    fact = models.CharField(max_length=64, blank=True, verbose_name=_("fact"))
    operator = models.CharField(max_length=8, choices=Operator.choices, blank=True, verbose_name=_("operator"))
    value = models.JSONField(
        null=True,
        blank=True,
        help_text=_("A literal to compare the fact with (instead of a threshold)."),
        verbose_name=_("value"),
    )
    outcomes = models.JSONField(default=list, blank=True, verbose_name=_("outcomes"))
    states = models.JSONField(default=list, blank=True, verbose_name=_("states"))
    window_start = models.TimeField(null=True, blank=True, verbose_name=_("window start"))
    window_end = models.TimeField(null=True, blank=True, verbose_name=_("window end"))
    timezone = models.CharField(
        max_length=64, blank=True, help_text=_("IANA name, e.g. Asia/Shanghai."), verbose_name=_("timezone")
    )
    unless = models.JSONField(
        default=list,
        blank=True,
        help_text=_(
            "Weak-signal phrases, one per line: a keyword inside one of them does not count "
            "(不是要投诉 keeps 投诉 in “我不是要投诉” from matching)."
        ),
        verbose_name=_("unless"),
    )
    unless_negated = models.BooleanField(
        default=False,
        help_text=_(
            "A keyword its own clause negates does not count either (我不打算起诉, 不用报警); a double "
            "negation or a question still does (不得不投诉, 难道我不会投诉吗)."
        ),
        verbose_name=_("unless negated"),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("condition")
        verbose_name_plural = _("conditions")
        ordering = ["rule", "position", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=ConditionKind.values), name="condition_kind_valid"),
            # What each kind needs of its row, as its adapter declares it.
            *(
                models.CheckConstraint(condition=~Q(kind=kind) | a.requires[1], name=a.requires[0])
                for kind, a in ADAPTERS.items()
                if a.requires is not None
            ),
        ]

    def __str__(self) -> str:
        return describe_condition(self)

    def clean(self) -> None:
        kind = adapter(self.kind)
        if kind is None:
            return  # refused by the field's choices
        errors = text_problems(self)
        errors.update(kind.problems(condition_values(self), point_view(self.rule.point if self.rule_id else None)))
        if errors:
            raise ValidationError(errors)


def condition_values(c: Condition) -> dict[str, Any]:
    """A condition's inputs as the kinds check them: plain values, references by key."""
    values = {name: getattr(c, name) for name in INPUTS if name not in ("keyword_list", "threshold")}
    values["keyword_list"] = c.keyword_list.key if c.keyword_list_id is not None and c.keyword_list else None
    values["threshold"] = c.threshold.key if c.threshold_id is not None and c.threshold else None
    return values


def point_view(point: DecisionPoint | None) -> PointView | None:
    if point is None:
        return None
    facts = point.facts if isinstance(point.facts, dict) else {}
    outcomes = tuple(point.outcomes) if isinstance(point.outcomes, list) else ()
    return PointView(
        key=point.key, facts=facts, outcomes=outcomes, machine=point.machine, session_fields=_machine_fields(point)
    )


def _machine_fields(point: DecisionPoint) -> dict[str, str]:
    """The fields the point's machine declares (name → type): what its session_field conditions may read."""
    if not point.machine:
        return {}
    # By name, as a ForeignKey names a model: rules.config.models.machines imports this module.
    machines = apps.get_model("rules", "StateMachine")
    declared = machines.objects.filter(key=point.machine).values_list("fields", flat=True).first() or []
    return {f["name"]: f.get("type", "") for f in declared if isinstance(f, dict) and isinstance(f.get("name"), str)}


def describe_condition(c: Condition) -> str:
    """A short human sentence for lists and the why panel."""
    kind = adapter(c.kind)
    return kind.describe(c) if kind is not None else c.kind

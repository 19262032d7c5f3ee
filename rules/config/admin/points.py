"""Decision points and their rules; a rule's conditions are edited inline on the rule."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Prefetch, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.display import summary_cell
from rules.config.admin.base import AuditedInline, ConfigAdmin
from rules.config.admin.forms import ConditionForm, DecisionPointForm, RuleForm
from rules.config.choices import HIGH_RISK_CATEGORIES
from rules.config.models.points import describe_condition
from rules.config.records import (
    condition_delete,
    condition_save,
    point_delete,
    point_save,
    rule_delete,
    rule_save,
)
from rules.config.revisions import Actor
from rules.models import Condition, DecisionPoint, Rule


@admin.register(DecisionPoint)
class DecisionPointAdmin(ConfigAdmin):
    governance_kind = "point"
    form = DecisionPointForm
    list_display = ("key", "name", "outcome_list", "default_outcome", "no_candidate", "rule_total")
    list_filter = ("no_candidate",)
    search_fields = ("key", "name", "description", "default_outcome")
    fieldsets = [
        (None, {"fields": ["key", "name", "description"]}),
        (
            _("Inputs and answers"),
            {"fields": ["facts", "outcomes", "candidate_whitelist", "default_outcome", "no_candidate"]},
        ),
        (_("Sessions"), {"fields": ["machine", "state_map", "fallback_state"]}),
        (
            _("Personal data in the decision log"),
            {"fields": ["mask_skip", "mask_patterns", "mask_facts", "mask_fact_paths", "store_raw_output"]},
        ),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DecisionPoint]:
        return super().get_queryset(request).annotate(rule_count=Count("rules", distinct=True))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[tuple[str | None, dict[str, Any]]]:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            fieldsets.insert(-1, (gettext("Rules"), {"fields": ["rules_overview"]}))
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        readonly = list(super().get_readonly_fields(request, obj))
        return [*readonly, "rules_overview"] if obj is not None else readonly

    @admin.display(description=_("outcomes"))
    def outcome_list(self, obj: DecisionPoint) -> str:
        return ", ".join(obj.outcomes or [])

    @admin.display(description=_("rules"), ordering="rule_count")
    def rule_total(self, obj: DecisionPoint) -> int:
        return obj.rule_count  # type: ignore[attr-defined]

    @admin.display(description=_("rules of this point"))
    def rules_overview(self, obj: DecisionPoint) -> str:
        add_url = reverse("admin:rules_rule_add") + f"?point={obj.pk}"
        rules = obj.rules.order_by("priority", "key").prefetch_related(
            Prefetch("conditions", queryset=Condition.objects.select_related("keyword_list", "threshold"))
        )
        rows = format_html_join(
            "",
            '<tr><td>{}</td><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    r.priority,
                    reverse("admin:rules_rule_change", args=[r.pk]),
                    r.key,
                    r.get_category_display(),
                    r.get_mode_display(),
                    r.outcome,
                    "; ".join(describe_condition(c) for c in r.conditions.all()) or "—",
                )
                for r in rules
            ),
        )
        return format_html(
            '<table class="arbiter-rules"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>"
            '<p><a class="addlink" href="{}">{}</a></p>',
            gettext("priority"),
            gettext("rule"),
            gettext("category"),
            gettext("mode"),
            gettext("outcome"),
            gettext("conditions"),
            rows,
            add_url,
            gettext("Add a rule to this point"),
        )

    def save_record(self, obj: DecisionPoint, *, actor: Actor, reason: str) -> None:
        point_save(point=obj, actor=actor, reason=reason)

    def delete_record(self, obj: DecisionPoint, *, actor: Actor, reason: str) -> None:
        point_delete(point=obj, actor=actor, reason=reason)


class ConditionInline(AuditedInline, admin.StackedInline):
    model = Condition
    form = ConditionForm
    fields = (
        "kind",
        "keyword_list",
        "unless",
        "unless_negated",
        ("fact", "operator"),
        ("threshold", "value"),
        "outcomes",
        "states",
        ("window_start", "window_end", "timezone"),
        "position",
    )
    classes = ("arbiter-conditions",)

    class Media:
        js = ("arbiter/admin/condition_kind.js",)

    def get_extra(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> int:
        return 1 if obj is None else 0

    def save_record(self, obj: Condition, *, actor: Actor, reason: str) -> None:
        condition_save(condition=obj, actor=actor, reason=reason)

    def delete_record(self, obj: Condition, *, actor: Actor, reason: str) -> None:
        condition_delete(condition=obj, actor=actor, reason=reason)


class HighRiskFilter(admin.SimpleListFilter):
    title = _("high-risk")
    parameter_name = "high_risk"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", gettext("High-risk (compliance, risk)")), ("no", gettext("Other (business, quality)"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Rule]) -> QuerySet[Rule]:
        if self.value() == "yes":
            return queryset.filter(category__in=HIGH_RISK_CATEGORIES)
        if self.value() == "no":
            return queryset.exclude(category__in=HIGH_RISK_CATEGORIES)
        return queryset


@admin.register(Rule)
class RuleAdmin(ConfigAdmin):
    governance_kind = "rule"

    def governance_key(self, obj: Rule) -> tuple[str, str]:
        return obj.key, obj.point.key

    form = RuleForm
    inlines = [ConditionInline]
    readonly_after_create = ("point", "key")
    list_display = ("key", "point", "priority", "category", "high_risk", "mode", "outcome", "condition_summary")
    list_display_links = ("key",)
    list_filter = ("point", "category", HighRiskFilter, "mode", "combinator")
    list_select_related = ("point",)
    search_fields = ("key", "description", "point__key", "outcome")
    ordering = ("point__key", "priority", "key")
    fieldsets = [
        (None, {"fields": ["point", "key", "description"]}),
        (_("Decision"), {"fields": ["priority", "category", "combinator", "outcome", "mode"]}),
        (_("Effective period (optional)"), {"fields": ["effective_from", "effective_until"], "classes": ["collapse"]}),
    ]

    class Media:
        js = ("arbiter/admin/rule_outcome.js",)

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True  # a revert would restore the rule's fields but not its conditions

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rule]:
        return (
            super()
            .get_queryset(request)
            .prefetch_related(
                Prefetch("conditions", queryset=Condition.objects.select_related("keyword_list", "threshold"))
            )
        )

    @admin.display(description=_("high-risk"), boolean=True, ordering="category")
    def high_risk(self, obj: Rule) -> bool:
        return obj.is_high_risk

    @admin.display(description=_("conditions"))
    def condition_summary(self, obj: Rule) -> str:
        joiner = gettext(" and ") if obj.combinator == "all" else gettext(" or ")
        return summary_cell(joiner.join(describe_condition(c) for c in obj.conditions.all()), chars=160)

    def save_record(self, obj: Rule, *, actor: Actor, reason: str) -> None:
        rule_save(rule=obj, actor=actor, reason=reason)

    def delete_record(self, obj: Rule, *, actor: Actor, reason: str) -> None:
        rule_delete(rule=obj, actor=actor, reason=reason)

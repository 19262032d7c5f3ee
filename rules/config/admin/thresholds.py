"""Thresholds: one named number, shown with the range it must stay in."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.fields import plain_number
from rules.config.admin.base import ConfigAdmin
from rules.config.admin.forms import ThresholdForm
from rules.config.records import threshold_delete, threshold_save
from rules.config.revisions import Actor
from rules.models import Condition, Threshold


def rules_using(conditions: QuerySet[Condition]) -> list[str]:
    """Links to the rules whose conditions are listed, each with the condition that uses the record."""
    items: list[str] = []
    for c in conditions.select_related("rule__point", "threshold", "keyword_list").order_by(
        "rule__point__key", "rule__key"
    ):
        url = reverse("admin:rules_rule_change", args=[c.rule_id])
        items.append(format_html(gettext('Rule <a href="{}">{}</a> — condition “{}”'), url, c.rule, c))
    return items


@admin.register(Threshold)
class ThresholdAdmin(ConfigAdmin):
    governance_kind = "threshold"
    form = ThresholdForm
    list_display = ("key", "name", "value_shown", "unit", "allowed_range", "high_risk", "used_by")
    list_filter = ("high_risk", "unit")
    search_fields = ("key", "name", "description")
    fieldsets = [
        (None, {"fields": ["key", "name", "description"]}),
        (_("Value"), {"fields": ["value", "unit", "min_value", "max_value", "high_risk"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Threshold]:
        return super().get_queryset(request).annotate(rule_count=Count("conditions__rule", distinct=True))

    @admin.display(description=_("value"), ordering="value")
    def value_shown(self, obj: Threshold) -> str:
        return plain_number(obj.value)

    @admin.display(description=_("allowed range"))
    def allowed_range(self, obj: Threshold) -> str:
        return obj.bounds_text()

    @admin.display(description=_("used by"), ordering="rule_count")
    def used_by(self, obj: Threshold) -> int:
        return obj.rule_count  # type: ignore[attr-defined]

    def describe_protected(self, objs: Any) -> list[str]:
        return rules_using(Condition.objects.filter(threshold__in=list(objs)))

    def save_record(self, obj: Threshold, *, actor: Actor, reason: str) -> None:
        threshold_save(threshold=obj, actor=actor, reason=reason)

    def delete_record(self, obj: Threshold, *, actor: Actor, reason: str) -> None:
        threshold_delete(threshold=obj, actor=actor, reason=reason)

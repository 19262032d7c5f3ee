"""Keyword lists: terms edited one by one inline, or pasted in bulk."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from decision_service.admin.kit import actor_of, reason_from, refused_on_form
from rules.config.admin.base import AuditedInline, ConfigAdmin
from rules.config.admin.forms import KeywordListForm
from rules.config.admin.thresholds import rules_using
from rules.config.records import (
    keyword_list_delete,
    keyword_list_save,
    keyword_term_delete,
    keyword_term_save,
    keyword_terms_add,
)
from rules.config.revisions import Actor
from rules.engine.evasion import EVASION_OPTIONS
from rules.models import Condition, KeywordList, KeywordTerm


class KeywordTermInline(AuditedInline, admin.TabularInline):
    model = KeywordTerm
    fields = ("term",)
    extra = 0
    verbose_name_plural = _("terms (stored normalised: full-width folded, lower case)")

    def save_record(self, obj: KeywordTerm, *, actor: Actor, reason: str) -> None:
        keyword_term_save(term=obj, actor=actor, reason=reason)

    def delete_record(self, obj: KeywordTerm, *, actor: Actor, reason: str) -> None:
        keyword_term_delete(term=obj, actor=actor, reason=reason)


@admin.register(KeywordList)
class KeywordListAdmin(ConfigAdmin):
    governance_kind = "keyword_list"
    form = KeywordListForm
    inlines = [KeywordTermInline]
    list_display = ("key", "name", "match_mode", "term_count", "used_by")
    list_filter = ("match_mode",)
    search_fields = ("key", "name", "description", "terms__term")
    fieldsets = [
        (None, {"fields": ["key", "name", "description", "match_mode"]}),
        (
            _("Matching that sees through evasion"),
            {"fields": ["fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS]},
        ),
        (_("Add many terms at once"), {"fields": ["bulk_terms"]}),
    ]

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True  # a revert would restore the list's fields but not its terms

    def get_queryset(self, request: HttpRequest) -> QuerySet[KeywordList]:
        return (
            super()
            .get_queryset(request)
            .annotate(term_total=Count("terms", distinct=True), rule_count=Count("conditions__rule", distinct=True))
        )

    @admin.display(description=_("terms"), ordering="term_total")
    def term_count(self, obj: KeywordList) -> int:
        return obj.term_total  # type: ignore[attr-defined]

    @admin.display(description=_("used by"), ordering="rule_count")
    def used_by(self, obj: KeywordList) -> int:
        return obj.rule_count  # type: ignore[attr-defined]

    def describe_protected(self, objs: Any) -> list[str]:
        return rules_using(Condition.objects.filter(keyword_list__in=list(objs)))

    def save_record(self, obj: KeywordList, *, actor: Actor, reason: str) -> None:
        try:
            keyword_list_save(keyword_list=obj, actor=actor, reason=reason)
        except ValidationError as exc:
            # A switch to regex mode is refused for a term that does not compile: say so at the mode.
            if hasattr(exc, "error_dict") and "term" in exc.error_dict:
                raise ValidationError({"match_mode": exc.message_dict["term"]}) from exc
            raise

    def delete_record(self, obj: KeywordList, *, actor: Actor, reason: str) -> None:
        keyword_list_delete(keyword_list=obj, actor=actor, reason=reason)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        pasted = form.pasted_terms()
        if pasted:
            with refused_on_form(field="bulk_terms"):
                keyword_terms_add(
                    keyword_list=form.instance, terms=pasted, actor=actor_of(request), reason=reason_from(request)
                )

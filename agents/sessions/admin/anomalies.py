"""Admin for model anomalies: read-only."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.sessions.models import Anomaly
from agents.sessions.selectors import session_pk
from decision_service.admin.display import key_cell, summary_cell, when_cell
from rules.decisions.admin import SessionLogAdmin
from rules.decisions.why import AGENT_CHARS, SESSION_CHARS, session_changelist_url


@admin.register(Anomaly)
class AnomalyAdmin(SessionLogAdmin):
    """What models did wrong: read-only, written only by the decide and transition services."""

    list_display = ("when", "code", "agent_label", "session", "point", "short_detail", "decision_link")
    list_display_links = ("when",)
    list_filter = ("code", "agent", "point")
    list_select_related = ("agent",)
    ordering = ("-created_at",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fields = (
        "created_at",
        "code",
        "agent",
        "session_id",
        "point",
        "detail",
        "raw",
        "decision_link",
        "session_page",
        "session_link",
    )
    readonly_fields = fields

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css",)}

    @admin.display(description=_("created at"), ordering="created_at")
    def when(self, obj: Anomaly) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("agent"), ordering="agent__name")
    def agent_label(self, obj: Anomaly) -> str:
        return key_cell(obj.agent.name if obj.agent is not None else "", chars=AGENT_CHARS)

    @admin.display(description=_("session"), ordering="session_id")
    def session(self, obj: Anomaly) -> str:
        return key_cell(obj.session_id, chars=SESSION_CHARS)

    @admin.display(description=_("detail"))
    def short_detail(self, obj: Anomaly) -> str:
        return summary_cell(obj.detail, chars=120)

    @admin.display(description=_("decision"))
    def decision_link(self, obj: Anomaly) -> str:
        if obj.decision_id is None:
            return "—"
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:rules_decisionrecord_change", args=[obj.decision_id]),
            str(obj.decision_id)[:8],
        )

    @admin.display(description=_("session decisions"))
    def session_link(self, obj: Anomaly) -> str:
        if not obj.session_id:
            return "—"
        return format_html(
            '<a href="{}">{}</a>', session_changelist_url(obj.session_id), gettext("decisions in this session")
        )

    @admin.display(description=_("session"))
    def session_page(self, obj: Anomaly) -> str:
        pk = session_pk(agent_id=obj.agent_id, session_id=obj.session_id)
        if pk is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:agents_session_change", args=[pk]), obj.session_id)


# --- sessions -------------------------------------------------------------------------------------------

"""Admin for tool calls: read-only. Each operation with its attempts; written only by the tool-call
services (``agents.tools.services``, ``agents.tools.results``) and the approvals."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from agents.tools.models import ToolAttempt, ToolCall
from decision_service.admin.display import key_cell, when_cell
from decision_service.admin.kit import ReadOnlyAdmin
from rules.decisions.why import AGENT_CHARS, SESSION_CHARS


class AttemptInline(admin.TabularInline):
    model = ToolAttempt
    extra = 0
    can_delete = False
    fields = (
        "attempt",
        "started_at",
        "deadline",
        "breaker_state",
        "finished_at",
        "outcome",
        "error_code",
        "declared",
        "message",
        "output_summary",
        "duration_ms",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    """What agents called: each operation, its status and attempts (inputs masked when written)."""

    list_display = ("when", "tool", "status", "attempt", "agent_label", "session_label", "state", "operation_id")
    list_display_links = ("when",)
    list_filter = ("tool", "status", "risk", "agent")
    list_select_related = ("agent", "session")
    search_fields = ("operation_id", "session__key")
    ordering = ("-created_at",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fields = (
        "operation_id",
        "tool",
        "status",
        "attempt",
        "agent",
        "session_page",
        "state",
        "revision",
        "risk",
        "input",
        "input_digest",
        "retry_at",
        "deadline",
        "answer",
        "decided_by",
        "decision_note",
        "decided_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = (AttemptInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolCall]:
        return super().get_queryset(request).select_related("agent", "session")

    @admin.display(description=_("created at"), ordering="created_at")
    def when(self, obj: ToolCall) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("agent"), ordering="agent__name")
    def agent_label(self, obj: ToolCall) -> str:
        return key_cell(obj.agent.name, chars=AGENT_CHARS)

    @admin.display(description=_("session"), ordering="session__key")
    def session_label(self, obj: ToolCall) -> str:
        return key_cell(obj.session.key, chars=SESSION_CHARS)

    @admin.display(description=_("session"))
    def session_page(self, obj: ToolCall) -> str:
        url = reverse("admin:agents_session_change", args=[obj.session_id])
        return format_html('<a href="{}">{}</a>', url, obj.session.key)

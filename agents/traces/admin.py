"""Reported events in the admin: read only (they are the runtime's account, not something staff edit)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from agents.traces.models import TraceEvent


@admin.register(TraceEvent)
class TraceEventAdmin(admin.ModelAdmin):
    list_display = ("sequence_id", "created_at", "session", "type", "name", "status", "duration_ms", "error_code")
    list_filter = ("type", "status")
    search_fields = ("session__key", "name", "error_code", "turn_id", "event_id", "prompt_version")
    list_select_related = ("session",)
    ordering = ("-sequence_id",)
    readonly_fields = [f.name for f in TraceEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

"""Upstream MCP servers in the admin: where a namespace's tool calls go, and the name of the environment
variable holding the secret (never the secret)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from decision_service.admin.forms import AuditedModelForm
from rules.config.admin.base import ConfigAdmin
from rules.config.mcp_servers import mcp_server_delete, mcp_server_store
from rules.config.revisions import Actor
from rules.models import McpServer


class McpServerForm(AuditedModelForm):
    class Meta:
        model = McpServer
        fields = [
            "name",
            "description",
            "url",
            "auth_kind",
            "auth_header",
            "auth_secret_env",
            "timeout_ms",
            "enabled",
            "tools_refresh_s",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}


@admin.register(McpServer)
class McpServerAdmin(ConfigAdmin):
    governance_kind = "mcp_server"
    form = McpServerForm
    list_display = ("name", "url", "auth_kind", "enabled", "timeout_ms", "tools_refresh_s")
    list_filter = ("enabled", "auth_kind")
    search_fields = ("name", "description", "url")
    fieldsets = [
        (None, {"fields": ["name", "description", "url", "enabled"]}),
        (_("Authentication"), {"fields": ["auth_kind", "auth_header", "auth_secret_env"]}),
        (_("Timings"), {"fields": ["timeout_ms", "tools_refresh_s"]}),
    ]

    def governance_key(self, obj: Any) -> tuple[str, str]:
        return obj.name, ""

    def save_record(self, obj: McpServer, *, actor: Actor, reason: str) -> None:
        mcp_server_store(server=obj, actor=actor, reason=reason)

    def delete_record(self, obj: McpServer, *, actor: Actor, reason: str) -> None:
        mcp_server_delete(user=actor, reason=reason, name=obj.name)

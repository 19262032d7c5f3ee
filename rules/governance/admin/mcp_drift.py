"""Drift of upstream MCP tools in the admin: read-only. The list (server, tool, kind, status, first and
last seen) and, for each drift, the difference between the approved contract and the contract made from
the upstream's definition, with the change request that proposes it. Written only by
``rules.governance.mcp_drift``; adopting a drift is approving its change request."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.display import when, when_cell
from decision_service.admin.kit import ReadOnlyAdmin
from rules.config.document.diff import config_diff, show
from rules.models import McpDriftStatus, McpToolDrift


def _document(tool: dict[str, Any] | None) -> dict[str, Any]:
    return {"thresholds": [], "keyword_lists": [], "points": [], "machines": [], "tools": [tool] if tool else []}


def drift_rows(drift: McpToolDrift) -> list[tuple[str, str, str]]:
    """(field, approved, upstream) for every field of the contract the upstream's definition changes."""
    rows: list[tuple[str, str, str]] = []
    for change in config_diff(_document(drift.approved), _document(drift.proposed)):
        if change.action == "add" and change.new is not None:
            rows += [(name, show(None), show(value)) for name, value in change.new.items() if name != "name"]
        else:
            rows += [(f.field, show(f.old), show(f.new)) for f in change.fields]
    return rows


@admin.register(McpToolDrift)
class McpToolDriftAdmin(ReadOnlyAdmin):
    list_display = ("tool_name", "server", "kind", "status", "first_seen_cell", "last_seen_cell", "request_link")
    list_filter = ("status", "kind", "server")
    search_fields = ("server", "tool")
    fields = (
        "server",
        "tool",
        "kind",
        "status",
        "request_link",
        "difference",
        "problem",
        "status_history",
        "first_seen",
        "last_seen",
        "fingerprint",
        "upstream",
    )
    readonly_fields = fields

    @admin.display(description=_("tool"), ordering="tool")
    def tool_name(self, obj: McpToolDrift) -> str:
        return obj.contract_name

    @admin.display(description=_("first seen"), ordering="first_seen")
    def first_seen_cell(self, obj: McpToolDrift) -> SafeString:
        return when_cell(obj.first_seen)

    @admin.display(description=_("last seen"), ordering="last_seen")
    def last_seen_cell(self, obj: McpToolDrift) -> SafeString:
        return when_cell(obj.last_seen)

    @admin.display(description=_("change request"))
    def request_link(self, obj: McpToolDrift) -> SafeString:
        request = obj.change_request
        if request is None:
            return format_html("{}", "—")
        url = reverse("admin:rules_changerequest_change", args=[request.pk])
        return format_html('<a href="{}">{}</a> ({})', url, request.pk, request.get_state_display())

    @admin.display(description=_("status history"))
    def status_history(self, obj: McpToolDrift) -> SafeString:
        """How its status moved, and why (its history rows; only rules.governance.mcp_drift writes them)."""
        rows = obj.history.order_by("history_date", "history_id").values_list(
            "history_date", "status", "history_change_reason"
        )
        lines = ((when(at), McpDriftStatus(status).label, gettext(why) if why else "") for at, status, why in rows)
        return format_html('<ul id="drift-history">{}</ul>', format_html_join("", "<li>{}: {} {}</li>", lines))

    @admin.display(description=_("difference"))
    def difference(self, obj: McpToolDrift) -> SafeString:
        rows = drift_rows(obj)
        if not rows:
            return format_html("{}", gettext("The upstream's definition equals the approved contract."))
        return format_html(
            '<table class="arbiter-diff-table" id="drift-diff"><thead><tr><th>{}</th><th>{}</th><th>{}</th></tr>'
            "</thead><tbody>{}</tbody></table>",
            gettext("field"),
            gettext("approved contract"),
            gettext("upstream"),
            format_html_join(
                "",
                '<tr><td>{}</td><td class="arbiter-before">{}</td><td class="arbiter-after">{}</td></tr>',
                rows,
            ),
        )

"""Configuration revisions: read-only, with the snapshot and what changed since the one before."""

from __future__ import annotations

import difflib
import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.display import summary_cell, when_cell
from decision_service.admin.forms import reason_shown
from rules.models import ConfigRevision


def _pretty(snapshot: Any) -> str:
    return json.dumps(snapshot, indent=2, ensure_ascii=False)


@admin.register(ConfigRevision)
class ConfigRevisionAdmin(admin.ModelAdmin):
    list_display = ("number", "created", "created_by", "reason_short", "short_digest")
    list_display_links = ("number",)
    list_select_related = ("created_by",)  # an optional key: Django would fetch it row by row
    list_filter = ("created_by", "created_at")
    search_fields = ("reason", "created_by__username", "digest")
    date_hierarchy = "created_at"
    fields = ("number", "created_by", "reason_text", "created_at", "digest", "changes", "snapshot_json")
    readonly_fields = fields

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/lists.css")}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: ConfigRevision) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("reason"))
    def reason_text(self, obj: ConfigRevision) -> str:
        return reason_shown(obj.reason)

    @admin.display(description=_("reason"), ordering="reason")
    def reason_short(self, obj: ConfigRevision) -> str:
        return summary_cell(reason_shown(obj.reason), chars=100)

    @admin.display(description=_("digest"))
    def short_digest(self, obj: ConfigRevision) -> str:
        return obj.digest[:12]

    @admin.display(description=_("snapshot"))
    def snapshot_json(self, obj: ConfigRevision) -> str:
        return format_html('<pre class="arbiter-json">{}</pre>', _pretty(obj.snapshot))

    @admin.display(description=_("changes from the previous revision"))
    def changes(self, obj: ConfigRevision) -> str:
        previous = ConfigRevision.objects.filter(number__lt=obj.number).order_by("-number").first()
        if previous is None:
            return gettext("The first revision.")
        diff = difflib.unified_diff(
            _pretty(previous.snapshot).splitlines(),
            _pretty(obj.snapshot).splitlines(),
            fromfile=gettext("revision %(number)s") % {"number": previous.number},
            tofile=gettext("revision %(number)s") % {"number": obj.number},
            lineterm="",
            n=2,
        )
        return format_html(
            '<pre class="arbiter-json arbiter-diff">{}</pre>', "\n".join(diff) or gettext("No difference.")
        )

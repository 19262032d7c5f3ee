"""Tools' circuit breakers in the admin: one page listing each tool contract with its breaker (from the
store in use), the failures in its window, the recent failed attempts by error code and, for people with
``agents.operate_breakers``, buttons to open or close it with a reason; below, the changes people made.

Registered for ``ToolBreaker`` (the page replaces its changelist; the rows are the store's, not edited by
hand) and ``BreakerChange`` (read only: the record of who opened or closed what, and why). Every change
goes through ``agents.tools.breaker_services``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.tools.breaker_backend import store
from agents.tools.breaker_selectors import breaker_changes, breakers_overview, breakers_view_allowed
from agents.tools.breaker_services import OPEN, breaker_change, breakers_operate_allowed
from agents.tools.models import BreakerChange, ToolBreaker
from decision_service.errors import DomainError

STATE_LABELS = {"closed": _("closed"), "half_open": _("half-open"), "open": _("open")}


@admin.register(ToolBreaker)
class ToolBreakerAdmin(admin.ModelAdmin):
    change_list_template = "admin/agents/toolbreaker/overview.html"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return breakers_view_allowed(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        change = path(
            "<str:tool>/change-breaker/",
            self.admin_site.admin_view(self.breaker_change_view),
            name="{}_{}_change_breaker".format(*info),
        )
        return [change, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        rows = [
            {
                "row": row,
                "state_label": STATE_LABELS.get(row.snapshot.state, row.snapshot.state),
                "action_url": reverse("admin:agents_toolbreaker_change_breaker", args=[row.tool]),
            }
            for row in breakers_overview()
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Tool circuit breakers"),
            "subtitle": None,
            "rows": rows,
            "store_name": store().name,
            "can_operate": breakers_operate_allowed(request.user),
            "changes": breaker_changes(),
            "changes_url": reverse("admin:agents_breakerchange_changelist"),
        }
        return TemplateResponse(request, self.change_list_template, context)

    def breaker_change_view(self, request: HttpRequest, tool: str) -> HttpResponse:
        """Open or close one tool's breaker (POST: ``action``, ``reason``); a refusal is a message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        action = request.POST.get("action", "")
        try:
            breaker_change(tool=tool, action=action, user=request.user, reason=request.POST.get("reason", ""))
        except DomainError as refused:
            problems = " ".join(str(m) for ms in (refused.errors or {}).values() for m in ms)  # type: ignore[union-attr]
            messages.error(
                request, gettext("%(tool)s: %(why)s") % {"tool": tool, "why": f"{refused.detail} {problems}".strip()}
            )
        else:
            done = (
                gettext("The breaker of %(tool)s is open until a person closes it.")
                if action == OPEN
                else gettext("The breaker of %(tool)s is closed; its failures are forgotten.")
            )
            messages.success(request, done % {"tool": tool})
        return HttpResponseRedirect(reverse("admin:agents_toolbreaker_changelist"))


@admin.register(BreakerChange)
class BreakerChangeAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tool", "action", "actor", "reason")
    list_filter = ("action", "tool")
    search_fields = ("tool", "actor", "reason")
    date_hierarchy = "created_at"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return breakers_view_allowed(request.user) or super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

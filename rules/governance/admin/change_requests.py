"""Change requests in the admin: the list (pending first), and a page with the diff, the impact preview,
the approvals and the buttons each person may use. Every button calls a change request service; what a
user may do is decided there, so the page only hides what would be refused anyway."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Case, Count, IntegerField, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.charts import bar_chart_svg
from decision_service.admin.display import summary_cell, when_cell
from decision_service.admin.forms import reason_shown
from decision_service.admin.kit import ReadOnlyAdmin, actor_of, refusal_text
from decision_service.errors import DomainError
from rules.config.document.diff import show
from rules.config.document.validate import config_from_yaml
from rules.config.selectors import config_document
from rules.config.yaml_export import document_yaml
from rules.errors import ChangeRequestChanged, DuplicateChangeRequest
from rules.governance.change_request_actions import change_request_actions
from rules.governance.change_requests import (
    change_request_acknowledge,
    change_request_approvals_required,
    change_request_approve,
    change_request_break_glass,
    change_request_diff,
    change_request_digest,
    change_request_event_line,
    change_request_reject,
    change_request_schedule,
    change_request_update,
    change_request_withdraw,
    config_document_apply,
)
from rules.governance.risk import risk_reason_text
from rules.models import ChangeRequest, ChangeRequestState

_ORDER = Case(
    When(state=ChangeRequestState.PENDING, then=Value(0)),
    When(state=ChangeRequestState.APPROVED, then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


class StateFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("open", gettext("open (pending or approved)")),
            *((v, str(label)) for v, label in ChangeRequestState.choices),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value == "open":
            return queryset.filter(state__in=[ChangeRequestState.PENDING, ChangeRequestState.APPROVED])
        return queryset.filter(state=value) if value else queryset


@admin.register(ChangeRequest)
class ChangeRequestAdmin(ReadOnlyAdmin):
    change_form_template = "admin/rules/changerequest/change_form.html"
    list_display = (
        "number",
        "state",
        "risk",
        "author_name",
        "reason_short",
        "records",
        "approvals_given",
        "created",
    )
    list_display_links = ("number",)
    list_filter = (StateFilter, "risk")
    search_fields = ("reason", "author_name")
    fields = ("state",)

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[ChangeRequest]:
        return (
            super()
            .get_queryset(request)
            .annotate(open_first=_ORDER, approval_count=Count("approvals"))
            .order_by("open_first", "-created_at", "-pk")
        )

    @admin.display(description=_("request"), ordering="pk")
    def number(self, obj: ChangeRequest) -> str:
        return f"#{obj.pk}"

    @admin.display(description=_("reason"), ordering="reason")
    def reason_short(self, obj: ChangeRequest) -> str:
        return summary_cell(reason_shown(obj.reason), chars=80)

    @admin.display(description=_("records"))
    def records(self, obj: ChangeRequest) -> str:
        labels = sorted(
            {f"{c['kind']} {c.get('point') + '.' if c.get('point') else ''}{c['key']}" for c in obj.changes}
        )
        more = gettext(" and %(count)s more") % {"count": len(labels) - 4} if len(labels) > 4 else ""
        shown = ", ".join(labels[:4]) + more
        return format_html('<span title="{}">{}</span>', "\n".join(labels), shown)

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: ChangeRequest) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("approvals"))
    def approvals_given(self, obj: ChangeRequest) -> str:
        return f"{obj.approval_count}/{change_request_approvals_required()}"  # type: ignore[attr-defined]

    # --- the request's page ----------------------------------------------------------------------------

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if obj is not None:
            context["cr"] = page_context(request, obj)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    def get_urls(self) -> list[URLPattern]:
        act = path(
            "<path:object_id>/act/",
            self.admin_site.admin_view(self.act_view),
            name="rules_changerequest_act",
        )
        return [act, *super().get_urls()]

    def act_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """One button of the page: the service decides whether this user may do it."""
        obj = self.get_object(request, unquote(object_id))
        if obj is None or request.method != "POST":
            return HttpResponseRedirect(reverse("admin:rules_changerequest_changelist"))
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        url = reverse("admin:rules_changerequest_change", args=[obj.pk])
        action = request.POST.get("action", "")
        reason = str(request.POST.get("reason", "")).strip()
        user = actor_of(request)
        try:
            if action == "approve":
                done = change_request_approve(
                    request=obj,
                    actor=user,
                    digest=str(request.POST.get("digest", "")),
                    reason=reason,
                    override_reason=str(request.POST.get("override_reason", "")),
                )
                said = (
                    gettext("Approved.")
                    if done.state != ChangeRequestState.APPLIED
                    else gettext("Approved and applied.")
                )
            elif action == "reject":
                change_request_reject(request=obj, actor=user, reason=reason)
                said = gettext("Rejected.")
            elif action == "withdraw":
                change_request_withdraw(request=obj, actor=user, reason=reason)
                said = gettext("Withdrawn.")
            elif action == "break_glass":
                change_request_break_glass(
                    request=obj, actor=user, digest=str(request.POST.get("digest", "")), reason=reason
                )
                said = gettext("Applied at once (break glass). A second person must review it.")
            elif action == "acknowledge":
                change_request_acknowledge(request=obj, actor=user, note=reason)
                said = gettext("Review acknowledged.")
            elif action == "edit":
                document = config_from_yaml(str(request.POST.get("config", "")))
                change_request_update(request=obj, document=document, actor=user, reason=reason or None)
                said = gettext("The request was edited; approvals given before were withdrawn.")
            elif action == "schedule":
                when = str(request.POST.get("apply_at", "")).strip()
                moment = parse_datetime(when) if when else None
                if when and moment is None:
                    raise DomainError(gettext("Give the time as YYYY-MM-DD HH:MM."))
                change_request_schedule(request=obj, actor=user, apply_at=moment)
                said = gettext("Scheduled.") if moment else gettext("It will apply as soon as it is approved.")
            else:
                raise DomainError(gettext("Unknown action %(action)r.") % {"action": action})
        except ChangeRequestChanged:
            # The page this comes back to shows the change as it is now: that is what to review again.
            self.message_user(
                request,
                gettext(
                    "Not approved: the request was edited after you opened it. What it changes now is shown "
                    "below; review it and approve again if it is right."
                ),
                messages.ERROR,
            )
            return HttpResponseRedirect(url)
        except DuplicateChangeRequest as exc:
            self.message_user(request, duplicate_text(exc), messages.ERROR)
            return HttpResponseRedirect(url)
        except DomainError as exc:
            self.message_user(request, gettext("Not done. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR)
            return HttpResponseRedirect(url)
        self.message_user(request, said, messages.SUCCESS)
        return HttpResponseRedirect(url)


def page_context(request: HttpRequest, obj: ChangeRequest) -> dict[str, Any]:
    """Everything the request's page shows, as plain values (the template escapes all of it)."""
    user: Any = request.user
    may = change_request_actions(request=obj, actor=user)
    impact = obj.impact or {}
    matrix = impact.get("matrix") or {}
    cells = sorted(
        ((f"{old} → {new}", count) for old, row in matrix.items() for new, count in row.items()),
        key=lambda cell: (-cell[1], cell[0]),
    )
    evaluated, changed = impact.get("evaluated") or 0, impact.get("changed") or 0
    summary_chart = bar_chart_svg(
        [(gettext("unchanged"), evaluated - changed), (gettext("changed"), changed)] if evaluated else [],
        title=gettext("Decisions replayed under the proposal"),
    )
    live = config_document()
    return {
        "obj": obj,
        "act_url": reverse("admin:rules_changerequest_act", args=[obj.pk]),
        # Posted back by the approve button: the approval is of the diff this page shows, nothing else.
        "digest": change_request_digest(obj.changes),
        "diff": [
            {"record": r.record, "field": r.field, "before": show(r.before), "after": show(r.after)}
            for r in change_request_diff(obj)
        ],
        "risks": [{"record": r.get("record", ""), "why": risk_reason_text(r)} for r in obj.risks],
        "approvals": list(obj.approvals.select_related("user")),
        "required": change_request_approvals_required(),
        "events": [{"at": e.at, **change_request_event_line(e)} for e in obj.events.all()],
        "impact": impact,
        "impact_running": obj.impact_status == "running",
        "matrix_chart": mark_safe(bar_chart_svg(cells, title=gettext("Decisions that would change, from → to"))),  # noqa: S308
        "summary_chart": mark_safe(summary_chart),  # noqa: S308 - bar_chart_svg escapes every label itself
        "broken": impact.get("broken_cases") or [],
        "can_approve": may.approve,
        "approver_is_author": may.approver_is_author,
        "can_reject": may.reject,
        "can_withdraw": may.withdraw,
        "can_edit": may.edit,
        "can_break_glass": may.break_glass,
        "can_acknowledge": may.acknowledge,
        # Only the author edits a pending request (may.edit), so only the author is shown its YAML.
        "proposal_yaml": document_yaml(config_document_apply(live, obj.changes)) if may.edit else "",
        "superseded": obj.superseded_by,
    }


def duplicate_text(exc: DuplicateChangeRequest) -> str:
    return gettext("Nothing was changed: change request %(number)s already proposes exactly this change.") % {
        "number": exc.change_request.pk
    }


def pending_notice(request_list: list[ChangeRequest]) -> str:
    """The line a record's page shows when open requests would change it."""
    links = [
        format_html(
            '<a href="{}">{}</a>',
            reverse("admin:rules_changerequest_change", args=[r.pk]),
            gettext("request %(number)s") % {"number": r.pk},
        )
        for r in request_list
    ]
    return format_html(gettext("A change to this record is pending ({})."), mark_safe(", ".join(links)))  # noqa: S308

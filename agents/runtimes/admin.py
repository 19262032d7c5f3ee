"""Admin for agent runtimes: tokens shown once, scopes edited through the services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.runtimes.forms import AgentRuntimeForm
from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create, agent_rotate_token, agent_save, agent_set_points
from decision_service.admin.display import when_cell
from decision_service.admin.kit import REFUSALS, actor_of, reason_from, refusal_text, refused_on_form
from rules.config.admin.base import ConfigAdmin
from rules.config.revisions import Actor, config_change

_NEW_TOKEN_ATTR = "_arbiter_new_token"  # noqa: S105 - an attribute name, not a secret


def _show_token_once(modeladmin: admin.ModelAdmin, request: HttpRequest, agent: AgentRuntime, token: str) -> None:
    modeladmin.message_user(
        request,
        format_html(
            gettext(
                "The token for <strong>{}</strong> is shown only this once — copy it now and give it to the "
                'agent runtime: <code class="arbiter-token">{}</code>'
            ),
            agent.name,
            token,
        ),
        messages.WARNING,
    )


@admin.register(AgentRuntime)
class AgentRuntimeAdmin(ConfigAdmin):
    form = AgentRuntimeForm
    readonly_after_create = ("name", "token_prefix", "created_at")
    filter_horizontal = ("points",)
    list_display = ("name", "token_start", "is_active", "point_list", "rate_limit", "created")
    list_filter = ("is_active", "points")
    search_fields = ("name", "description", "token_prefix", "points__key")
    actions = ["rotate_token", "deactivate"]
    fieldsets = [
        (None, {"fields": ["name", "token_prefix", "created_at", "description", "points", "is_active"]}),
        (_("Rate limit"), {"fields": ["rate_per_minute", "rate_burst"]}),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[tuple[str | None, dict[str, Any]]]:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:  # the token does not exist yet
            hidden = {"token_prefix", "created_at"}
            fieldsets = [(t, {**o, "fields": [f for f in o["fields"] if f not in hidden]}) for t, o in fieldsets]
        return fieldsets

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentRuntime]:
        return super().get_queryset(request).prefetch_related("points")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # no delete service: deactivate the runtime instead

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True  # the token is not in the history, so a revert could not restore it

    @admin.display(description=_("token starts with"), ordering="token_prefix")
    def token_start(self, obj: AgentRuntime) -> str:
        return f"{obj.token_prefix}…"

    @admin.display(description=_("rate limit"))
    def rate_limit(self, obj: AgentRuntime) -> str:
        if obj.rate_per_minute is None:
            return "—"
        return gettext("%(rate)s/min, burst %(burst)s") % {
            "rate": obj.rate_per_minute,
            "burst": obj.rate_burst or gettext("default"),
        }

    @admin.display(description=_("decision points"))
    def point_list(self, obj: AgentRuntime) -> str:
        return ", ".join(p.key for p in obj.points.all()) or "—"

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: AgentRuntime) -> str:
        return when_cell(obj.created_at)

    def save_record(self, obj: AgentRuntime, *, actor: Actor, reason: str) -> None:
        agent_save(agent=obj, actor=actor, reason=reason)

    def save_model(self, request: HttpRequest, obj: AgentRuntime, form: Any, change: bool) -> None:
        actor, reason = actor_of(request), reason_from(request)
        point_keys = [p.key for p in form.cleaned_data.get("points", [])]
        with refused_on_form():
            if change:
                # agent_set_points saves the runtime's other fields too: one history row.
                agent_set_points(agent=obj, point_keys=point_keys, actor=actor, reason=reason)
                return
            agent, token = agent_create(
                name=obj.name,
                point_keys=point_keys,
                actor=actor,
                reason=reason,
                description=obj.description,
                is_active=obj.is_active,
            )
        # The admin goes on with the form's instance (log entry, redirect): make it the created record.
        for f in AgentRuntime._meta.concrete_fields:
            setattr(obj, f.attname, getattr(agent, f.attname))
        obj._state.adding, obj._state.db = False, agent._state.db
        setattr(request, _NEW_TOKEN_ATTR, (agent, token))

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # Not form.save_m2m(): the points were set by agent_create / agent_set_points in save_model.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def response_add(
        self, request: HttpRequest, obj: AgentRuntime, post_url_continue: str | None = None
    ) -> HttpResponse:
        created = getattr(request, _NEW_TOKEN_ATTR, None)
        if created is not None:
            _show_token_once(self, request, *created)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(permissions=["change"], description=_("Rotate token of selected agents (old token stops working)"))
    def rotate_token(self, request: HttpRequest, queryset: QuerySet[AgentRuntime]) -> None:
        reason = "Token rotated in admin"
        try:
            with config_change(actor=actor_of(request), reason=reason):
                rotated = [(a, agent_rotate_token(agent=a, actor=actor_of(request), reason=reason)) for a in queryset]
        except REFUSALS as exc:
            self.message_user(
                request, gettext("No token was rotated. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR
            )
            return
        for agent, token in rotated:
            _show_token_once(self, request, agent, token)

    @admin.action(permissions=["change"], description=_("Deactivate selected agents (their tokens are refused)"))
    def deactivate(self, request: HttpRequest, queryset: QuerySet[AgentRuntime]) -> None:
        reason = "Deactivated in admin"
        try:
            with config_change(actor=actor_of(request), reason=reason):
                for agent in queryset.filter(is_active=True):
                    agent.is_active = False
                    agent_save(agent=agent, actor=actor_of(request), reason=reason)
        except REFUSALS as exc:
            self.message_user(
                request, gettext("No agent was deactivated. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR
            )
            return
        self.message_user(request, gettext("The selected agents are inactive."), messages.SUCCESS)

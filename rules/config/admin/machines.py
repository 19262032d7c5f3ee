"""State machines in the admin, with the picture of the machine as typed."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.config.admin.base import ConfigAdmin
from rules.config.admin.forms import StateMachineForm
from rules.config.machine_diagram import machine_svg
from rules.config.machines import machine_delete, machine_save
from rules.config.revisions import Actor
from rules.models import StateMachine

PICTURE = _("Picture")


@admin.register(StateMachine)
class StateMachineAdmin(ConfigAdmin):
    governance_kind = "machine"
    form = StateMachineForm
    list_display = ("key", "name", "state_list", "initial_state", "handoff_state", "max_anomalies")
    list_filter = ("initial_state", "handoff_state", "max_anomalies")
    search_fields = ("key", "name", "description")
    readonly_fields = ("diagram", "session_links")
    fieldsets = [
        (None, {"fields": ["key", "name", "description"]}),
        (_("States"), {"fields": ["states", "initial_state", "handoff_state", "terminal_states"]}),
        (_("Moves, actions and timeouts"), {"fields": ["transitions", "actions", "timeouts", "max_anomalies"]}),
        (_("Fields"), {"fields": ["fields"]}),
        (_("Events and guards"), {"fields": ["events", "guards"]}),
        (PICTURE, {"fields": ["diagram", "session_links"]}),
    ]

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/sessions.css")}

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[tuple[str | None, dict[str, Any]]]:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:  # nothing to draw before the first save
            fieldsets = [(t, o) for t, o in fieldsets if t != PICTURE]
        return fieldsets

    @admin.display(description=_("states"))
    def state_list(self, obj: StateMachine) -> str:
        return ", ".join(obj.states or [])

    @admin.display(description=_("the machine"))
    def diagram(self, obj: StateMachine) -> SafeString:
        """The definition on the form drawn: as saved, or as typed when the form refused it."""
        svg = machine_svg(
            states=obj.states,
            initial_state=obj.initial_state,
            handoff_state=obj.handoff_state,
            terminal_states=obj.terminal_states,
            transitions=obj.transitions,
            title=obj.key,
            fields=obj.fields,
            events=obj.events,
            guards=obj.guards,
        )
        # machine_svg escapes every label and attribute itself (xml.sax.saxutils), so its markup is safe.
        return format_html('<div class="arbiter-diagram">{}</div>', mark_safe(svg))  # noqa: S308

    @admin.display(description=_("sessions"))
    def session_links(self, obj: StateMachine) -> SafeString:
        if obj.pk is None:
            return format_html("{}", "—")
        try:
            # The sessions' admin belongs to the agents app, which builds on this one: linked by URL name.
            url = reverse("admin:agents_session_changelist")
        except NoReverseMatch:
            return format_html("{}", "—")
        return format_html(
            gettext('<a href="{}">open sessions</a> · <a href="{}">in the handoff state ({})</a>'),
            f"{url}?{urlencode({'machine__id__exact': obj.pk})}",
            f"{url}?{urlencode({'machine__id__exact': obj.pk, 'handoff': 'yes'})}",
            obj.handoff_state,
        )

    def save_record(self, obj: StateMachine, *, actor: Actor, reason: str) -> None:
        machine_save(machine=obj, actor=actor, reason=reason)

    def delete_record(self, obj: StateMachine, *, actor: Actor, reason: str) -> None:
        machine_delete(machine=obj, actor=actor, reason=reason)

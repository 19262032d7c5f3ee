"""Admin for sessions: read-only list (stuck first), the session timeline and the human queue."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.views.main import SEARCH_VAR, ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.timesince import timesince
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.sessions.fields import fields_masked
from agents.sessions.handoff import session_handoff_reason
from agents.sessions.models import Session, TransitionKind
from agents.sessions.selectors import (
    STUCK_HELP,
    SessionField,
    TimelineEntry,
    field_masker,
    session_fields_with_history,
    session_is_stuck,
    session_list,
    session_states,
    session_timeline,
    sessions_ended_q,
    sessions_in_handoff_q,
    sessions_open_q,
    sessions_stuck_q,
)
from agents.sessions.services import session_allowed_actions, session_allowed_targets
from decision_service.admin.display import key_cell, when_cell
from rules.decisions.admin import ReadOnlyAdmin
from rules.decisions.why import RULED_BY_LABELS, SESSION_CHARS, session_changelist_url
from rules.models import StateMachine

TIMELINE_LIMIT = 500  # events on one session page, the latest ones
RAW_CHARS = 600  # of an anomaly's raw model output, on the timeline
HUMAN_QUEUE_PAGE = 100
KIND_LABELS = dict(TransitionKind.choices)
OPEN, ENDED, ALL = "open", "ended", "all"


def _status(request: HttpRequest) -> str:
    """The status filter's value: as chosen, else "all" while searching (an id is looked up wherever
    its session is), else "open"."""
    chosen = request.GET.get(SessionStatusFilter.parameter_name)
    if chosen in (OPEN, ENDED, ALL):
        return chosen
    return ALL if request.GET.get(SEARCH_VAR, "").strip() else OPEN


def human_since(since: dt.datetime, now: dt.datetime) -> str:
    """How long ago ``since`` was: in seconds under a minute, else Django's "2 hours, 5 minutes"."""
    seconds = int((now - since).total_seconds())
    if seconds < 60:
        return ngettext("%(count)d second", "%(count)d seconds", max(seconds, 0)) % {"count": max(seconds, 0)}
    return timesince(since, now, depth=2)


class SessionStatusFilter(admin.SimpleListFilter):
    """Open sessions by default, so the list starts with the ones that may need someone."""

    title = _("status")
    parameter_name = "status"

    def __init__(self, request: HttpRequest, params: Any, model: Any, model_admin: Any) -> None:
        super().__init__(request, params, model, model_admin)
        self.default = _status(request) if self.parameter_name not in self.used_parameters else OPEN

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            (OPEN, gettext("open (not in a terminal state)")),
            (ENDED, gettext("ended (in a terminal state)")),
            (ALL, gettext("all")),
        ]

    def value(self) -> str:
        chosen = super().value()
        return chosen if chosen in (OPEN, ENDED, ALL) else self.default

    def choices(self, changelist: ChangeList) -> Any:
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value == OPEN:
            return queryset.filter(sessions_open_q())
        if value == ENDED:
            return queryset.filter(sessions_ended_q())
        return queryset


class YesNoFilter(admin.SimpleListFilter):
    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", gettext("yes")), ("no", gettext("no"))]

    def condition(self) -> Any:
        raise NotImplementedError

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(self.condition())
        if self.value() == "no":
            return queryset.exclude(self.condition())
        return queryset


class HandoffFilter(YesNoFilter):
    title = _("handoff state")
    parameter_name = "handoff"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", gettext("in its machine's handoff state")), ("no", gettext("elsewhere"))]

    def condition(self) -> Any:
        return sessions_in_handoff_q()


class StuckFilter(YesNoFilter):
    title = _("time in state")
    parameter_name = "stuck"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", gettext("stuck")), ("no", gettext("not stuck"))]

    def condition(self) -> Any:
        return sessions_stuck_q(now=timezone.now())


class SessionStateFilter(admin.SimpleListFilter):
    """The states the selected machine (or any machine) declares, from configuration."""

    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        machine = request.GET.get("machine__id__exact")
        if machine and machine.isdigit():
            found = StateMachine.objects.filter(pk=int(machine)).values_list("states", flat=True).first()
            states = list(found or [])
        else:
            states = session_states()
        selected = self.value()
        if selected and selected not in states:
            states.append(selected)
        return [(s, s) for s in states]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(state=value) if value else queryset


def _entry_row(entry: TimelineEntry, shown: Callable[[str, Any], Any]) -> dict[str, Any]:
    """One timeline event as the template shows it (plain values; the template escapes them); field values
    through ``shown`` (``field_masker``)."""
    row: dict[str, Any] = {"kind": entry.kind, "at": entry.at, "seq": entry.seq}
    if entry.transition is not None:
        t = entry.transition
        row.update(
            move=t,
            kind_label=KIND_LABELS.get(t.kind, t.kind),
            # Written masked (agents.sessions.fields), and masked again with the machine as it is now: a
            # field made pii since was stored in clear.
            fields_changed=", ".join(
                f"{name}={'∅' if v is None else shown(name, v)}" for name, v in t.fields_changed.items()
            ),
            decision_url=(
                reverse("admin:rules_decisionrecord_change", args=[t.decision_id]) if t.decision_id else None
            ),
        )
    elif entry.decision is not None:
        d = entry.decision
        candidate = ""
        if d.candidate_invalid:
            candidate = gettext("invalid output")
        elif d.candidate_decision:
            candidate = d.candidate_decision
            if d.candidate_confidence is not None:
                candidate += f" ({d.candidate_confidence:.2f})"
        row.update(
            decision=d,
            candidate=candidate,
            ruled_by_label=RULED_BY_LABELS.get(d.ruled_by, d.ruled_by),
            url=reverse("admin:rules_decisionrecord_change", args=[d.pk]),
        )
    elif entry.queue_event is not None:
        row.update(queue_event=entry.queue_event)
    elif entry.attempt is not None:
        # Input, message and output summary were masked when the attempt was written (agents.tools).
        call = entry.attempt.call
        row.update(
            attempt=entry.attempt,
            call=call,
            input=_value_text(call.input),
            next=entry.tool_next,
            url=reverse("admin:agents_toolcall_change", args=[call.pk]),
        )
    elif entry.anomaly is not None:
        a = entry.anomaly
        row.update(
            anomaly=a,
            raw=Truncator(a.raw).chars(RAW_CHARS),
            raw_truncated=len(a.raw) > RAW_CHARS,
            url=reverse("admin:agents_anomaly_change", args=[a.pk]),
            decision_url=(
                reverse("admin:rules_decisionrecord_change", args=[a.decision_id]) if a.decision_id else None
            ),
        )
    return row


def _value_text(value: Any) -> str:
    """A field's value as one line of text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _field_row(field: SessionField) -> dict[str, Any]:
    """One field as the template shows it (values come masked from the selector; the template escapes)."""
    return {
        "field": field,
        "value": _value_text(field.value) if field.present else None,
        "changes": [
            {
                "change": c,
                "kind_label": KIND_LABELS.get(c.kind, c.kind),
                "old": _value_text(c.old) if c.old is not None else None,
                "new": None if c.cleared else _value_text(c.new),
                "decision_url": (
                    reverse("admin:rules_decisionrecord_change", args=[c.decision_id]) if c.decision_id else None
                ),
            }
            for c in reversed(field.history)  # the latest first, next to the value it left
        ],
    }


def session_page_context(session: Session, *, now: dt.datetime) -> dict[str, Any]:
    """What a session's page shows above its record: where it is now, and its timeline."""
    machine = session.machine
    entries = session_timeline(session, limit=TIMELINE_LIMIT + 1)
    shown = field_masker(machine)
    ended = session.state in machine.terminal_states
    return {
        "session": session,
        "machine_url": reverse("admin:rules_statemachine_change", args=[machine.pk]),
        "agent_url": reverse("admin:agents_agentruntime_change", args=[session.agent_id]),
        "ended": ended,
        "in_handoff": session.state == machine.handoff_state,
        "undeclared": session.state not in machine.states,
        "stuck": session_is_stuck(session, now=now),
        "time_in_state": human_since(session.state_entered_at, now),
        "stack": list(session.stack or []),
        "allowed_transitions": session_allowed_targets(session),
        "allowed_actions": [] if ended else session_allowed_actions(session),
        "fields": [_field_row(f) for f in session_fields_with_history(session)],
        "timeline": [_entry_row(e, shown) for e in entries[-TIMELINE_LIMIT:]],
        "timeline_cut": len(entries) > TIMELINE_LIMIT,
        "timeline_limit": TIMELINE_LIMIT,
        "decisions_url": session_changelist_url(session.key),
        "anomalies_url": reverse("admin:agents_anomaly_changelist") + "?" + urlencode({"q": session.key}),
        "human_queue_url": reverse("admin:agents_session_human_queue"),
    }


class SessionAdmin(ReadOnlyAdmin):
    """Sessions, read-only: only the session service moves them. Open sessions first, stuck ones on top."""

    change_form_template = "admin/agents/session/change_form.html"
    change_list_template = "admin/agents/session/change_list.html"
    human_queue_template = "admin/agents/session/human_queue.html"
    list_display = (
        "session_id",
        "agent",
        "machine",
        "state_label",
        "seq",
        "anomalies",
        "time_in_state",
        "handoff_reason_label",
        "updated",
    )
    list_display_links = ("session_id",)
    list_filter = (SessionStatusFilter, StuckFilter, HandoffFilter, "machine", SessionStateFilter, "agent")
    sortable_by = ("seq", "anomalies", "time_in_state", "updated")
    search_fields = ("key",)  # shows the search box; the matching is get_search_results
    search_help_text = _("Session id: the exact id, or the start of one followed by * (e.g. 7f3a*).")
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    # get_ordering decides; this only keeps the list from marking the model's "-updated_at" as its sort.
    ordering = ("state_entered_at",)
    fieldsets = [
        (
            _("Record"),
            {
                "fields": [
                    "key",
                    "agent",
                    "machine",
                    "state",
                    "seq",
                    "stack",
                    "anomaly_count",
                    "handoff_reason_label",
                    "state_entered_at",
                    "created_at",
                    "updated_at",
                    "context_json",
                    "fields_json",
                ],
                "classes": ["collapse"],
            },
        )
    ]
    readonly_fields = (
        "key",
        "agent",
        "machine",
        "state",
        "seq",
        "stack",
        "anomaly_count",
        "handoff_reason_label",
        "state_entered_at",
        "created_at",
        "updated_at",
        "context_json",
        "fields_json",
    )

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/sessions.css")}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Session]:
        return session_list(now=timezone.now())

    def get_ordering(self, request: HttpRequest) -> list[str]:
        # Open sessions: the stuck ones first, each group longest in its state first. The rows come
        # from the (machine, state, state_entered_at) index; only open sessions are sorted.
        if _status(request) == OPEN:
            return ["-stuck", "state_entered_at"]
        return ["-state_entered_at"]

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.endswith("*"):
            prefix = term.rstrip("*")
            return (queryset.filter(key__startswith=prefix) if prefix else queryset), False
        return queryset.filter(key=term), False

    # --- columns ----------------------------------------------------------------------------------------

    @admin.display(description=_("session id"))
    def session_id(self, obj: Session) -> str:
        return key_cell(obj.key, chars=SESSION_CHARS)

    @admin.display(description=_("anomalies"), ordering="anomaly_count")
    def anomalies(self, obj: Session) -> int:
        return obj.anomaly_count

    @admin.display(description=_("state"), ordering="state")
    def state_label(self, obj: Session) -> str:
        machine = obj.machine
        if obj.state == machine.handoff_state:
            return format_html(
                '{} <span class="arbiter-badge arbiter-badge-handoff">{}</span>', obj.state, gettext("handoff")
            )
        if obj.state in machine.terminal_states:
            return format_html(
                '{} <span class="arbiter-badge arbiter-badge-ended">{}</span>', obj.state, gettext("ended")
            )
        return obj.state

    @admin.display(description=_("time in state"), ordering="-state_entered_at")
    def time_in_state(self, obj: Session) -> str:
        spent = human_since(obj.state_entered_at, timezone.now())
        if getattr(obj, "stuck", False):
            return format_html(
                '{} <span class="arbiter-badge arbiter-badge-stuck" title="{}">{}</span>',
                spent,
                STUCK_HELP,
                gettext("stuck"),
            )
        return spent

    @admin.display(description=_("updated"), ordering="updated_at")
    def updated(self, obj: Session) -> str:
        return when_cell(obj.updated_at)

    @admin.display(description=_("handoff reason"), ordering="handoff_reason")
    def handoff_reason_label(self, obj: Session) -> str:
        # The reason the agent API and the queue show (one function decides it), not the stored column:
        # outside the handoff state there is none, whatever a row kept.
        return session_handoff_reason(obj) or "—"

    @admin.display(description=_("context"))
    def context_json(self, obj: Session) -> str:
        return format_html(
            '<pre class="arbiter-json">{}</pre>', json.dumps(obj.context, indent=2, ensure_ascii=False, sort_keys=True)
        )

    # --- the changelist and the session page ------------------------------------------------------------

    @admin.display(description=_("fields"))
    def fields_json(self, obj: Session) -> str:
        # Personal-data fields masked: staff see that a phone number is held, never which.
        masked = fields_masked(obj.machine, obj.field_values or {})
        return format_html(
            '<pre class="arbiter-json">{}</pre>', json.dumps(masked, indent=2, ensure_ascii=False, sort_keys=True)
        )

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = {
            **(extra_context or {}),
            "stuck_help": STUCK_HELP,
            "human_queue_url": reverse("admin:agents_session_human_queue"),
            "human_queue_count": session_list().filter(sessions_in_handoff_q()).count(),
        }
        return super().changelist_view(request, extra_context)

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
            context["page"] = session_page_context(obj, now=timezone.now())
            context["stuck_help"] = STUCK_HELP
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

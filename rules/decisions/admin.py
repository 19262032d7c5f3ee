"""The decision log in the admin: read-only, with a "why" panel on each decision and a replay view.

The log can hold many millions of rows, so the list avoids the queries that would scan all of it:
- the point and outcome filters list their choices from the configuration, not with a DISTINCT over
  the log (Django's default for a plain column);
- the date filter is a fixed list of ranges (today, past 7 days, …) rather than a date hierarchy,
  which would run a DISTINCT over the dates of every row;
- facet counts are never shown, and ``show_full_result_count`` is off (no second COUNT(*));
- only the time column sorts (what the indexes serve); sorting by another would sort the whole log;
- the search box matches session ids through the ``(session_id, created_at)`` index (see
  ``session_search``) rather than Django's case-insensitive ``icontains``, which no index serves.
What remains is the paginator's one COUNT(*) of the filtered rows, which page numbers need.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.display import flag_cell, key_cell, summary_cell, when_cell
from decision_service.admin.kit import ReadOnlyAdmin, actor_of
from rules.decisions.replay import decision_replay
from rules.decisions.selectors import LLM_MODEL_PARAM, LLM_PROMPT_PARAM, UNKNOWN_LLM, decision_llm_names
from rules.decisions.why import (
    AGENT_CHARS,
    SESSION_CHARS,
    SESSION_SEARCH_HELP,
    session_changelist_url,
    why_context,
    why_differs,
    why_side,
)
from rules.errors import DomainError
from rules.governance.admin.simulator import simulator_view
from rules.governance.regressions import regression_case_pin
from rules.models import (
    CandidateRequestCount,
    DecisionPoint,
    DecisionRecord,
    RegressionCase,
)


def session_search(queryset: QuerySet, term: str) -> QuerySet:
    """Rows of one session (``term``), or of every session whose id starts with ``term`` minus a final ``*``.

    Both forms are served by an index that leads with ``session_id``: equality directly; a prefix
    through the lower bound ``session_id >= prefix`` (a range scan), with ``startswith`` keeping only
    the true matches (a plain ``LIKE 'x%'`` uses such an index only under the "C" collation).
    """
    term = term.strip()
    if not term:
        return queryset
    if term.endswith("*"):
        prefix = term.rstrip("*")
        if not prefix:
            return queryset
        return queryset.filter(session_id__gte=prefix, session_id__startswith=prefix)
    return queryset.filter(session_id=term)


class SessionLogAdmin(ReadOnlyAdmin):
    """A read-only log searched by session id (see ``session_search``)."""

    search_fields = ("session_id",)  # shows the search box; the matching is ``session_search``
    search_help_text = SESSION_SEARCH_HELP

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        return session_search(queryset, search_term), False


class PointFilter(admin.SimpleListFilter):
    """Decision points as configured today (a point deleted since still filters by URL)."""

    title = _("decision point")
    parameter_name = "point"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        keys = list(DecisionPoint.objects.order_by("key").values_list("key", flat=True))
        selected = self.value()
        if selected and selected not in keys:
            keys.append(selected)
        return [(k, k) for k in keys]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(point=value) if value else queryset


class OutcomeFilter(admin.SimpleListFilter):
    """Outcomes of the selected point, or of every point, as configured today."""

    title = _("decision")
    parameter_name = "decision"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        points = DecisionPoint.objects.all()
        point = request.GET.get(PointFilter.parameter_name)
        if point:
            points = points.filter(key=point)
        outcomes = {outcome for row in points.values_list("outcomes", flat=True) for outcome in row or []}
        selected = self.value()
        if selected:
            outcomes.add(selected)
        return [(o, o) for o in sorted(outcomes)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(decision=value) if value else queryset


class AgentFilter(admin.SimpleListFilter):
    """Agent runtimes by name, as the log keeps them: those among the latest decisions (a bounded read of
    the time index, not a DISTINCT over the whole log); another name still filters by URL."""

    title = _("agent")
    parameter_name = "agent"
    RECENT = 2000

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        recent = DecisionRecord.objects.order_by("-created_at").values_list("agent_name", flat=True)[: self.RECENT]
        names = set(recent)
        selected = self.value()
        if selected:
            names.add(selected)
        return [(n, n) for n in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(agent_name=value) if value else queryset


class LlmFilter(admin.SimpleListFilter):
    """The model (or prompt version) that made the candidate, among the latest decisions; "unknown" for
    decisions whose agent named none. Another value still filters by URL."""

    parameter_name = LLM_MODEL_PARAM

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names = set(decision_llm_names(column=self.parameter_name, recent=AgentFilter.RECENT))
        selected = self.value()
        if selected and selected != UNKNOWN_LLM:
            names.add(selected)
        return [(n, n) for n in sorted(names)] + [(UNKNOWN_LLM, gettext("unknown"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(**{self.parameter_name: "" if value == UNKNOWN_LLM else value})


class ModelFilter(LlmFilter):
    title = _("model")
    parameter_name = LLM_MODEL_PARAM


class PromptVersionFilter(LlmFilter):
    title = _("prompt version")
    parameter_name = LLM_PROMPT_PARAM


# --- the "why" panel: everything a reviewer needs to see why a decision came out as it did ------------


@admin.register(DecisionRecord)
class DecisionRecordAdmin(SessionLogAdmin):
    change_form_template = "admin/rules/decisionrecord/change_form.html"
    replay_template = "admin/rules/decisionrecord/replay.html"
    list_display = (
        "time",
        "point",
        "decision",
        "ruled_by",
        "winning_rule",
        "candidate",
        "overridden_mark",
        "agent_label",
        "session",
        "revision",
    )
    list_display_links = ("time",)
    # Sorting by other columns would sort the whole (filtered) log; time is what the indexes serve.
    sortable_by = ("time",)
    list_filter = (
        PointFilter,
        OutcomeFilter,
        "ruled_by",
        "overridden",
        AgentFilter,
        ModelFilter,
        PromptVersionFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    ordering = ("-created_at",)
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fieldsets = [
        (
            _("Record"),
            {
                "fields": [
                    "id",
                    "created_at",
                    "agent_name",
                    "session_id",
                    "session_state",
                    "engine",
                    "llm_model",
                    "llm_prompt_version",
                    "llm_latency_ms",
                    "idempotency_key",
                    "request_digest",
                ],
                "classes": ["collapse"],
            },
        )
    ]
    readonly_fields = (
        "id",
        "created_at",
        "agent_name",
        "session_id",
        "session_state",
        "engine",
        "llm_model",
        "llm_prompt_version",
        "llm_latency_ms",
        "idempotency_key",
        "request_digest",
    )

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/decisions.css")}

    # --- columns ----------------------------------------------------------------------------------------

    @admin.display(description=_("time"), ordering="created_at")
    def time(self, obj: DecisionRecord) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("winning rule"), ordering="rule_key")
    def winning_rule(self, obj: DecisionRecord) -> str:
        return obj.rule_key or "—"

    @admin.display(description=_("candidate"))
    def candidate(self, obj: DecisionRecord) -> str:
        if obj.candidate_invalid:
            return gettext("invalid output")
        if not obj.candidate_decision:
            return "—"
        if obj.candidate_confidence is None:
            return obj.candidate_decision
        return f"{obj.candidate_decision} ({obj.candidate_confidence:.2f})"

    @admin.display(description=_("overridden"))
    def overridden_mark(self, obj: DecisionRecord) -> str:
        return flag_cell(obj.overridden)

    @admin.display(description=_("agent"), ordering="agent_name")
    def agent_label(self, obj: DecisionRecord) -> str:
        return key_cell(obj.agent_name, chars=AGENT_CHARS)

    @admin.display(description=_("session"), ordering="session_id")
    def session(self, obj: DecisionRecord) -> str:
        return key_cell(obj.session_id, chars=SESSION_CHARS)

    # --- the detail page --------------------------------------------------------------------------------

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
            context["why"] = why_context(obj)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    # --- the replay view --------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        replay = path(
            "<path:object_id>/replay/",
            self.admin_site.admin_view(self.replay_view),
            name="{}_{}_replay".format(*info),
        )
        pin = path(
            "<path:object_id>/pin/",
            self.admin_site.admin_view(self.pin_view),
            name="{}_{}_pin".format(*info),
        )
        from rules.reports.admin import decision_map_view

        # The decision-point map is built on the log: it lives under it, for those who may read it.
        report = path("map/", self.admin_site.admin_view(decision_map_view), name="rules_decision_map")
        simulator = path(
            "simulator/",
            self.admin_site.admin_view(lambda request: simulator_view(self, request)),
            name="{}_{}_simulator".format(*info),
        )
        return [report, simulator, replay, pin, *super().get_urls()]

    def pin_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Pin the decision as a regression case, with the logged outcome or a corrected one."""
        record = self.get_object(request, unquote(object_id))
        if record is None or request.method != "POST":
            return HttpResponseRedirect(reverse("admin:rules_decisionrecord_changelist"))
        if not request.user.has_perm("rules.add_regressioncase"):
            raise PermissionDenied
        url = reverse("admin:rules_decisionrecord_change", args=[record.pk])
        try:
            case = regression_case_pin(
                record=record,
                actor=actor_of(request),
                expected=str(request.POST.get("expected", "")).strip() or None,
                note=str(request.POST.get("note", "")).strip(),
            )
        except DomainError as exc:
            self.message_user(request, gettext("Not pinned. %(why)s") % {"why": exc.detail}, messages.ERROR)
            return HttpResponseRedirect(url)
        self.message_user(
            request,
            gettext("Pinned as regression case %(case)s: it must keep deciding %(outcome)s.")
            % {"case": case.pk, "outcome": case.expected},
            messages.SUCCESS,
        )
        return HttpResponseRedirect(url)

    def replay_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The decision evaluated again: under the revision it was made under, and under today's."""
        record = self.get_object(request, unquote(object_id))
        if record is None:
            self.message_user(
                request, gettext("There is no decision with the id “%(id)s”.") % {"id": object_id}, messages.WARNING
            )
            return HttpResponseRedirect(reverse("admin:rules_decisionrecord_changelist"))
        if not self.has_view_permission(request, record):
            raise PermissionDenied
        problem = ""
        sides: list[dict[str, Any]] = []
        identical = None
        masked_facts: tuple[str, ...] = ()
        current_revision = None
        try:
            replay = decision_replay(record=record)
        except DomainError as exc:
            problem = exc.detail
        else:
            identical = replay.identical
            masked_facts = replay.masked_facts
            current_revision = replay.current_revision
            recorded = why_side(replay.recorded, replay.revision, gettext("recorded"))
            assert recorded is not None
            replayed = why_side(replay.replayed, replay.revision, gettext("replayed under the recorded revision"))
            current = why_side(replay.current, replay.current_revision, gettext("under the current revision"))
            for side in (recorded, replayed, current):
                if side is not None:
                    side["differs"] = why_differs(side, recorded)
                    sides.append(side)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Replay of %(decision)s") % {"decision": record},
            "subtitle": None,
            "record": record,
            "change_url": reverse("admin:rules_decisionrecord_change", args=[record.pk]),
            "problem": problem,
            "sides": sides,
            "identical": identical,
            "masked_facts": masked_facts,
            "current_revision": current_revision,
            "current_missing": not problem and len(sides) < 3,
            "current_same": len(sides) == 3 and not sides[2]["differs"],
        }
        return TemplateResponse(request, self.replay_template, context)


@admin.register(CandidateRequestCount)
class CandidateRequestCountAdmin(ReadOnlyAdmin):
    """How often each point answered "ask your LLM" (``needs_candidate``), per agent and day."""

    list_display = ("day", "point", "agent_name", "count")
    list_filter = ("point", "agent_name", ("day", admin.DateFieldListFilter))
    ordering = ("-day", "point")
    show_facets = admin.ShowFacets.NEVER
    fields = ("point", "agent_name", "day", "count")


@admin.register(RegressionCase)
class RegressionCaseAdmin(admin.ModelAdmin):
    """Pinned cases: made from the decision log, checked by every change request and check_regressions."""

    list_display = ("pk", "point", "expected", "input_short", "note_short", "created_by", "created")
    list_select_related = ("created_by",)  # an optional key: Django would fetch it row by row
    list_filter = ("point", "expected")
    search_fields = ("note", "input")
    readonly_fields = (
        "point",
        "input",
        "facts",
        "session_state",
        "candidate_decision",
        "candidate_confidence",
        "candidate_invalid",
        "keyword_hits",
        "masked",
        "masked_facts",
        "decided_at",
        "expected",
        "decision_id",
        "created_by",
        "created_at",
    )
    fields = (*readonly_fields, "note")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # pinned from a logged decision (its page), never typed in

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/lists.css")}

    @admin.display(description=_("input"))
    def input_short(self, obj: RegressionCase) -> str:
        return summary_cell(obj.input, chars=60)

    @admin.display(description=_("note"), ordering="note")
    def note_short(self, obj: RegressionCase) -> str:
        return summary_cell(obj.note, chars=60)

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: RegressionCase) -> str:
        return when_cell(obj.created_at)


__all__ = [
    "CandidateRequestCountAdmin",
    "DecisionRecordAdmin",
    "SessionLogAdmin",
    "session_changelist_url",
    "session_search",
    "why_context",
]

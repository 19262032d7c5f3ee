"""The decision-point map in the admin: the report (``rules.reports.decision_map``) with server-side SVG
charts, every number a link to the filtered decision log (or the "ask your LLM" counts, or the
anomalies) behind it. Presentation only: the numbers come from the selector.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from decision_service.admin.forms import reason_shown
from rules.decisions.selectors import LLM_MODEL_PARAM, LLM_PROMPT_PARAM, UNKNOWN_LLM
from rules.errors import InvalidRequest, UnknownPoint
from rules.models import ChangeRequestState, DecisionPoint, NoCandidatePolicy, RuleCategory, RuleMode
from rules.reports import charts
from rules.reports.classify import Reason
from rules.reports.counting import day_bounds
from rules.reports.decision_map import DAYS_DEFAULT, DAYS_MAX, DAYS_MIN, days_parse, decision_map
from rules.reports.export import decision_map_csv
from rules.reports.snapshots import OVERRIDE_RATE_MOVE, changes_lines

DAY_CHOICES = (1, 7, 14, 30, 60, 90)


def _parse(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


class LogLinks:
    """URLs of the admin lists behind each number of the report, within its window."""

    def __init__(self, window: dict[str, Any]) -> None:
        self.start, self.end = _parse(window["start"]), _parse(window["end"])
        self.tz = ZoneInfo(window["time_zone"])
        self.log = reverse("admin:rules_decisionrecord_changelist")
        self.counts = reverse("admin:rules_candidaterequestcount_changelist")
        try:
            self.anomalies: str | None = reverse("admin:agents_anomaly_changelist")
        except NoReverseMatch:  # the agents app is not installed
            self.anomalies = None

    def _bounds(self, day: str | None) -> dict[str, str]:
        if day is None:
            return {"created_at__gte": self.start.isoformat(), "created_at__lte": self.end.isoformat()}
        first, after = day_bounds(dt.date.fromisoformat(day), self.tz)
        bounds = {"created_at__gte": max(first, self.start).isoformat(), "created_at__lte": self.end.isoformat()}
        bounds["created_at__lt"] = after.isoformat()
        return bounds

    def decisions(
        self,
        *,
        point: str,
        day: str | None = None,
        ruled_by: str | None = None,
        overridden: bool | None = None,
        rule_key: str | None = None,
        matched_rule: str | None = None,
        with_candidate: bool = False,
        avoided: bool = False,
        tokens: bool = False,
        llm: tuple[str | None, str | None] | None = None,
    ) -> str:
        query = {"point": point, **self._bounds(day)}
        if llm is not None:  # a row of the map's breakdown: None is "unknown", the log's filters say it so
            query[LLM_MODEL_PARAM] = llm[0] if llm[0] is not None else UNKNOWN_LLM
            query[LLM_PROMPT_PARAM] = llm[1] if llm[1] is not None else UNKNOWN_LLM
        if ruled_by:
            query["ruled_by__exact"] = ruled_by
        if overridden is not None:
            query["overridden__exact"] = "1" if overridden else "0"
        if rule_key:
            query.update({"rule_key": rule_key, "ruled_by__exact": "hard_rule"})
        if matched_rule:
            # The log keeps matched rules as JSON objects; their text holds "key": "<key>" on every database.
            query["matched_rules__icontains"] = f'"key": "{matched_rule}"'
        if with_candidate:
            query["candidate_decision__gt"] = ""
        if avoided:
            query.update({"candidate_decision__exact": "", "candidate_raw__exact": "", "candidate_invalid__exact": "0"})
        if tokens:
            query["tokens_prompt__isnull"] = "False"
        return self.log + "?" + urlencode(query)

    def needs_candidate(self, *, point: str, day: str | None = None) -> str:
        first = day or self.start.astimezone(self.tz).date().isoformat()
        last = day or self.end.astimezone(self.tz).date().isoformat()
        return self.counts + "?" + urlencode({"point": point, "day__gte": first, "day__lte": last})

    def anomaly_list(self, *, point: str) -> str | None:
        if self.anomalies is None:
            return None
        query = {"point": point, "created_at__gte": self.start.isoformat(), "created_at__lte": self.end.isoformat()}
        return self.anomalies + "?" + urlencode(query)


def shown(text: Any) -> str:
    """A finding of the report in the operator's language: the report itself (for the API, the CSV and
    the snapshots) keeps its English text."""
    if isinstance(text, Reason):
        return (
            gettext(text.msgid) % {k: shown(v) for k, v in text.params.items()} if text.params else gettext(text.msgid)
        )
    return str(text)


def _label(choices: Any, value: str) -> str:
    """A stored choice's label (合规 for ``compliance``); the value itself if the choices do not have it."""
    try:
        return str(choices(value).label)
    except ValueError:
        return value


def _last_change(change: dict[str, Any] | None) -> dict[str, Any] | None:
    if change is None:
        return None
    actions = {"created": gettext("created"), "changed": gettext("changed"), "deleted": gettext("deleted")}
    return {
        **change,
        "what": shown(change["what"]),
        "action": actions.get(change["action"], change["action"]),
        "reason": reason_shown(change["reason"]),
    }


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}%"


def _by_model_rows(p: dict[str, Any], links: LogLinks) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "override_pct": _pct(m["override_rate"]),
            "anomaly_pct": _pct(m["anomaly_rate"]),
            "decisions_url": links.decisions(point=p["key"], llm=(m["model"], m["prompt_version"])),
        }
        for m in p.get("by_model", [])
    ]


def _point_view(p: dict[str, Any], links: LogLinks) -> dict[str, Any]:
    key = p["key"]
    rules = {r["key"]: r for r in p["rules"]}
    try:
        point_pk = DecisionPoint.objects.filter(key=key).values_list("pk", flat=True).first()
        point_url = reverse("admin:rules_decisionpoint_change", args=[point_pk]) if point_pk else None
    except NoReverseMatch:
        point_url = None
    return {
        **p,
        "reasons": [shown(r) for r in p["reasons"]],
        "shadowed_rules": [{**s, "why": shown(s["why"])} for s in p["shadowed_rules"]],
        "rules": [
            {**r, "category": _label(RuleCategory, r["category"]), "mode": _label(RuleMode, r["mode"])}
            for r in p["rules"]
        ],
        "when_no_candidate": _label(NoCandidatePolicy, p["when_no_candidate"]),
        "pending_changes": [
            {**c, "state": _label(ChangeRequestState, c["state"]), "reason": reason_shown(c["reason"])}
            for c in p["pending_changes"]
        ],
        "last_change": _last_change(p["last_change"]),
        "point_url": point_url,
        "urls": {
            "decisions": links.decisions(point=key),
            "ruled_by": {kind: links.decisions(point=key, ruled_by=kind) for kind in p["by_ruled_by"]},
            "with_candidate": links.decisions(point=key, with_candidate=True),
            "overridden": links.decisions(point=key, overridden=True),
            "llm_calls_avoided": links.decisions(point=key, avoided=True),
            "needs_candidate": links.needs_candidate(point=key),
            "anomalies": links.anomaly_list(point=key),
            "tokens": links.decisions(point=key, tokens=True),
        },
        "by_ruled_by_rows": [
            (charts.RULED_BY_LABELS[kind], n, links.decisions(point=key, ruled_by=kind))
            for kind, n in p["by_ruled_by"].items()
        ],
        "by_model_rows": _by_model_rows(p, links),
        "top_rule_rows": [
            {
                **r,
                "mode": _label(RuleMode, rules[r["key"]]["mode"]) if r["key"] in rules else gettext("(deleted)"),
                "hits_url": links.decisions(point=key, matched_rule=r["key"]),
                "decided_url": links.decisions(point=key, rule_key=r["key"]),
            }
            for r in p["top_rules"]
        ],
        "charts": {
            "ruled_by": mark_safe(charts.ruled_by_share(key, p["daily"], links.decisions)),  # noqa: S308 - escaped
            "override_rate": mark_safe(charts.override_rate(key, p["daily"], links.decisions)),  # noqa: S308
            "rule_hits": mark_safe(charts.rule_hits(key, p["top_rules"], links.decisions)),  # noqa: S308
        },
    }


def decision_map_view(request: HttpRequest) -> HttpResponse:
    """The decision-point map page (and its CSV with ``?format=csv``); for those who may read the log."""
    if not request.user.has_perm("rules.view_decisionrecord"):
        raise PermissionDenied
    try:
        days = days_parse(request.GET.get("days"))
    except InvalidRequest:
        messages.error(
            request,
            gettext("Days must be a whole number from %(min)s to %(max)s; showing %(default)s.")
            % {"min": DAYS_MIN, "max": DAYS_MAX, "default": DAYS_DEFAULT},
        )
        days = DAYS_DEFAULT
    point = request.GET.get("point", "")
    try:
        report = decision_map(days=days, point=point)
    except UnknownPoint:
        messages.error(
            request, gettext("There is no decision point '%(point)s'; showing every point.") % {"point": point}
        )
        point = ""
        report = decision_map(days=days)
    if request.GET.get("format") == "csv":
        response = HttpResponse(decision_map_csv(report).encode("utf-8"), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="decision-map-{days}d.csv"'
        return response
    links = LogLinks(report["window"])
    from django.contrib import admin

    context = {
        **admin.site.each_context(request),
        "title": gettext("Decision-point map"),
        "report": report,
        "points": [_point_view(p, links) for p in report["points"]],
        "since_snapshot": report.get("since_snapshot"),
        "snapshot_changes": changes_lines(report["since_snapshot"]) if report.get("since_snapshot") else [],
        "move_points": round(100 * OVERRIDE_RATE_MOVE),
        "all_points": list(DecisionPoint.objects.order_by("key").values_list("key", flat=True)),
        "selected_point": point,
        "days": days,
        "day_choices": sorted({*DAY_CHOICES, days}),
        "csv_url": "?" + urlencode({"days": days, "point": point, "format": "csv"}),
    }
    return TemplateResponse(request, "admin/rules/decision_map.html", context)

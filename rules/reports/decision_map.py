"""The decision-point map: per decision point, who decides there and how well that is governed, built
from the live configuration and the decision log (docs/report.md says what every field means).

``decision_map`` is a selector: it reads and never writes. The window runs from exactly ``days`` × 24
hours before ``now`` (inclusive) to ``now`` (inclusive), ``now`` being the moment of the request; the
per-day series is by day in the project's ``TIME_ZONE``.

Each local day the window touches is counted one of two ways (``rules.reports.counting``): a whole
closed day inside the window from its daily rollup (``rules.reports.rollups``), and everything else —
the partial first day, today up to ``now``, and any day without a rollup — directly from the log. Both
use the same counting function, so the edges stay exact to the microsecond and a missing rollup is
never read as zero.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from rules.config.selectors import config_document, revision_latest
from rules.errors import InvalidRequest, UnknownPoint
from rules.hooks import report_ghost_failures
from rules.models import (
    OPEN_STATES,
    ChangeRequest,
    Condition,
    DecisionPoint,
    DecisionRollup,
    DecisionRollupDay,
    KeywordList,
    KeywordTerm,
    Rule,
    Threshold,
)
from rules.reports.classify import (
    GOVERNANCE_KINDS,
    Reason,
    gettext_noop,
    point_governance,
    rule_in_effect,
    shadowed_rules,
)
from rules.reports.counting import RULED_BY, TICK, DayCounts, count_range, day_bounds, needs_by_date, report_time_zone
from rules.reports.snapshots import since_snapshot

DAYS_DEFAULT = 14
DAYS_MIN = 1
DAYS_MAX = 90
TOP_RULES = 10


@dataclass(frozen=True)
class Window:
    start: dt.datetime
    end: dt.datetime
    days: int

    def dates(self) -> list[dt.date]:
        """The local days (``TIME_ZONE``) the window touches, oldest first."""
        _, tz = report_time_zone()
        first, last = self.start.astimezone(tz).date(), self.end.astimezone(tz).date()
        return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "time_zone": report_time_zone()[0],
        }


def _iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def days_parse(raw: Any, *, empty_is_absent: bool = True) -> int:
    """The ``days`` parameter: a whole number from 1 to 90, 14 when absent; ``InvalidRequest`` otherwise.
    An empty value counts as absent (the admin's form sends one) unless ``empty_is_absent`` is off (the
    API, whose spec says a given ``days`` is a number)."""
    if raw is None or (raw == "" and empty_is_absent):
        return DAYS_DEFAULT
    text = str(raw)
    if not (text.isascii() and text.isdigit()) or not DAYS_MIN <= int(text) <= DAYS_MAX:
        raise InvalidRequest(
            f"days must be a whole number from {DAYS_MIN} to {DAYS_MAX}.",
            errors={"days": [f"A whole number from {DAYS_MIN} to {DAYS_MAX}."]},
        )
    return int(text)


def report_window(*, days: int, now: dt.datetime | None = None) -> Window:
    if not DAYS_MIN <= days <= DAYS_MAX:
        raise InvalidRequest(
            f"days must be a whole number from {DAYS_MIN} to {DAYS_MAX}.",
            errors={"days": [f"A whole number from {DAYS_MIN} to {DAYS_MAX}."]},
        )
    end = now or timezone.now()
    return Window(start=end - dt.timedelta(days=days), end=end, days=days)


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def _counts_by_day(window: Window, points: list[str] | None) -> tuple[dict[str, dict[dt.date, DayCounts]], int]:
    """Point → local day → counts over the window, and how many days were read from rollups.

    A whole closed day inside the window is its rollup. The window's first day is partial; when it is
    closed, rolled up, and the part before the window is the shorter one, it is counted as its rollup
    less a direct count of that part (fewer rows read, the same numbers). Every other stretch — today
    so far, a day without a rollup — is counted directly."""
    name, tz = report_time_zone()
    plan = []
    for day in window.dates():
        first, after = day_bounds(day, tz)
        closed = after <= window.end
        whole = first >= window.start and closed
        # Worth reading the rollup: a whole day, or a first day mostly inside the window.
        complement = not whole and closed and first < window.start and window.start - first < after - window.start
        plan.append((day, first, max(first, window.start), min(after, window.end + TICK), whole, complement))
    wanted = [day for day, _, _, _, whole, complement in plan if whole or complement]
    rolled: dict[dt.date, dict[str, DayCounts]] = defaultdict(dict)
    marked: set[dt.date] = set()
    if wanted:
        markers = DecisionRollupDay.objects.filter(time_zone=name, day__in=wanted)
        marked = set(markers.values_list("day", flat=True))
        rows = DecisionRollup.objects.filter(rollup_day__in=markers).select_related("rollup_day")
        if points is not None:
            rows = rows.filter(point__in=points)
        for row in rows:
            rolled[row.rollup_day.day][row.point] = DayCounts.from_row(row)
    by_point: dict[str, dict[dt.date, DayCounts]] = defaultdict(dict)
    direct = []
    for day, first, start, end, _whole, complement in plan:
        if day not in marked:
            direct.append((day, start, end))
            continue
        per_point = rolled.get(day, {})
        if complement:
            for point, before in count_range(first, start, points).items():
                per_point.setdefault(point, DayCounts()).subtract(before)
        for point, counts in per_point.items():
            by_point[point][day] = counts
    needs = needs_by_date([day for day, _, _ in direct], points)
    for day, start, end in direct:
        counted = count_range(start, end, points)
        for point in set(counted) | {p for p, days in needs.items() if days.get(day)}:
            counts = counted.get(point) or DayCounts()
            counts.needs_candidate = needs.get(point, Counter()).get(day, 0)
            by_point[point][day] = counts
    used = sum(1 for day, *_, whole, _complement in plan if whole and day in marked)
    return by_point, used


def _traffic(total: DayCounts) -> dict[str, Any]:
    return {
        "decisions": total.decisions,
        "by_ruled_by": {kind: getattr(total, kind) for kind in RULED_BY},
        "with_candidate": total.with_candidate,
        "overridden": total.overridden,
        "override_rate": _rate(total.overridden, total.with_candidate),
        "llm_calls_avoided": total.llm_calls_avoided,
        "needs_candidate": total.needs_candidate,
        "anomalies": sum(total.anomalies.values()),
        "anomalies_by_code": dict(sorted(total.anomalies.items())),
        "tokens": {
            "prompt": total.tokens_prompt,
            "completion": total.tokens_completion,
            "total": total.tokens_prompt + total.tokens_completion,
        },
        "by_model": by_model(total),
    }


def by_model(total: DayCounts) -> list[dict[str, Any]]:
    """The point's rates per (model, prompt version) that made its candidates, most decisions first: after
    an upgrade the old and the new model are two rows. Decisions logged without the model's name (and
    anomalies raised by no decision) are the row whose model and prompt version are null ("unknown")."""
    rows = []
    for (model, version), n in total.by_llm.items():
        if not any(n.values()):
            continue
        rows.append(
            {
                "model": model or None,
                "prompt_version": version or None,
                "decisions": n["decisions"],
                "with_candidate": n["with_candidate"],
                "overridden": n["overridden"],
                "override_rate": _rate(n["overridden"], n["with_candidate"]),
                "anomalies": n["anomalies"],
                "anomaly_rate": _rate(n["anomalies"], n["decisions"]),
            }
        )
    return sorted(rows, key=lambda r: (-r["decisions"], r["model"] or "", r["prompt_version"] or ""))


def _ghost_failures(window: Window, points: list[str] | None) -> dict[str, dict[str, Any]]:
    """Per point, the ghost failures among the window's decisions that have had their time (the agents
    app finds them: ``rules.hooks.report_ghost_failures``), their ids and times as the report writes them."""
    found: dict[str, dict[str, Any]] = {}
    for answer in report_ghost_failures.ask(start=window.start, end=window.end, points=points):
        for point, ghosts in answer.items():
            mine = found.setdefault(point, {"count": 0, "latest": []})
            mine["count"] += ghosts["count"]
            mine["latest"] += [
                {
                    "decision_id": g["id"],
                    "created_at": _iso(g["created_at"]),
                    "session_id": g["session_id"],
                    "session_state": g["session_state"],
                    "decision": g["decision"],
                    "mapped_state": g["mapped_state"],
                }
                for g in ghosts["latest"]
            ]
    return found


def _touches(change: Mapping[str, Any], point: str, lists: set[str], thresholds: set[str]) -> bool:
    kind, key = change.get("kind"), change.get("key")
    if kind == "point":
        return bool(key == point)
    if kind == "rule":
        return bool(change.get("point") == point)
    if kind == "keyword_list":
        return key in lists
    if kind == "threshold":
        return key in thresholds
    return False


def _pending(point: str, lists: set[str], thresholds: set[str], requests: list[ChangeRequest]) -> list[dict[str, Any]]:
    return [
        {
            "id": r.pk,
            "state": r.state,
            "risk": r.risk,
            "author": r.author_name,
            "reason": r.reason,
            "created_at": _iso(r.created_at),
        }
        for r in requests
        if any(_touches(c, point, lists, thresholds) for c in r.changes or [])
    ]


def _last_change(point: DecisionPoint, lists: set[str], thresholds: set[str]) -> dict[str, Any] | None:
    """The latest recorded change to the point, its rules and conditions, or the lists and thresholds it uses."""
    rule_ids = Rule.history.filter(point_id=point.pk).values("id")
    list_ids = KeywordList.objects.filter(key__in=lists).values("pk")
    sources: list[tuple[str, Any]] = [
        ("point", DecisionPoint.history.filter(id=point.pk)),
        ("rule", Rule.history.filter(point_id=point.pk)),
        ("condition", Condition.history.filter(rule_id__in=rule_ids)),
        ("keyword_list", KeywordList.history.filter(key__in=lists)),
        ("keyword_term", KeywordTerm.history.filter(keyword_list_id__in=list_ids)),
        ("threshold", Threshold.history.filter(key__in=thresholds)),
    ]
    latest: tuple[str, Any] | None = None
    for kind, history in sources:
        row = history.select_related("history_user").order_by("-history_date", "-history_id").first()
        if row is not None and (latest is None or row.history_date > latest[1].history_date):
            latest = (kind, row)
    if latest is None:
        return None
    kind, row = latest
    user = row.history_user
    key = getattr(row, "key", "")
    labels = {  # English in the report; the admin shows them translated (a Reason keeps its message)
        "rule": Reason(gettext_noop("rule %(key)s"), key=key),
        "condition": Reason(gettext_noop("a condition")),
        "point": Reason(gettext_noop("the point")),
        "keyword_list": Reason(gettext_noop("keyword list %(key)s"), key=key),
        "keyword_term": Reason(gettext_noop("keyword term")),
        "threshold": Reason(gettext_noop("threshold %(key)s"), key=key),
    }
    label = labels.get(kind, f"{kind.replace('_', ' ')} {key}".strip())
    return {
        "who": user.get_username() if user is not None else "",
        "when": _iso(row.history_date),
        "reason": row.history_change_reason or "",
        "what": label,
        "action": {"+": "created", "~": "changed", "-": "deleted"}.get(row.history_type, row.history_type),
    }


def _configured_parts(point: Mapping[str, Any], document: Mapping[str, Any], now: dt.datetime) -> dict[str, Any]:
    """What the point's configuration uses: its rules by category and mode, keyword lists and thresholds."""
    rules = sorted(point.get("rules", []), key=lambda r: (r["priority"], r["key"]))
    by_category: dict[str, dict[str, int]] = {}
    list_keys: list[str] = []
    threshold_keys: list[str] = []
    for r in rules:
        modes = by_category.setdefault(r["category"], {"enforce": 0, "shadow": 0, "off": 0})
        modes[r.get("mode", "enforce")] = modes.get(r.get("mode", "enforce"), 0) + 1
        for c in r.get("conditions", []):
            for value in (c.get("input_contains"),):
                if isinstance(value, str) and value not in list_keys:
                    list_keys.append(value)
            for value in (c.get("candidate_confidence_below"), c.get("threshold")):
                if isinstance(value, str) and value not in threshold_keys:
                    threshold_keys.append(value)
    lists = {kl["key"]: kl for kl in document.get("keyword_lists", [])}
    thresholds = {t["key"]: t for t in document.get("thresholds", [])}
    return {
        "rules": [
            {
                "key": r["key"],
                "priority": r["priority"],
                "category": r["category"],
                "mode": r.get("mode", "enforce"),
                "outcome": r["outcome"],
                "in_effect": rule_in_effect(r, now),
            }
            for r in rules
        ],
        "rules_by_category": by_category,
        "keyword_lists": [
            {"key": k, "match": lists[k].get("match", "substring"), "terms": len(lists[k].get("terms", []))}
            for k in list_keys
            if k in lists
        ],
        "thresholds": [
            {
                "key": k,
                "value": thresholds[k]["value"],
                "unit": thresholds[k].get("unit", ""),
                "high_risk": bool(thresholds[k].get("high_risk")),
            }
            for k in threshold_keys
            if k in thresholds
        ],
    }


# Just over 80 lines: the report's fields assembled in the order docs/report.md lists them.
def decision_map(
    *, days: int = DAYS_DEFAULT, point: str = "", now: dt.datetime | None = None, with_changes: bool = True
) -> dict[str, Any]:
    """The decision-point map over the last ``days`` days up to ``now`` (default: this moment), for every
    configured point or only ``point``. Plain JSON-safe data; see docs/report.md. ``since_snapshot`` says
    what changed since the latest stored snapshot (``with_changes=False`` leaves it out: a snapshot
    itself does not hold one)."""
    window = report_window(days=days, now=now)
    document = config_document()
    points = document["points"]
    if point:
        points = [p for p in points if p["key"] == point]
        if not points:
            raise UnknownPoint(f"There is no decision point '{point}'.")
    scope = [p["key"] for p in points] if point else None
    by_day, rolled_up = _counts_by_day(window, scope)
    ghosts = _ghost_failures(window, scope)
    open_requests = list(ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk"))
    records_by_key = {p.key: p for p in DecisionPoint.objects.filter(key__in=[p["key"] for p in points])}
    dates = window.dates()

    out = []
    for p in points:
        key = p["key"]
        governance = point_governance(p, document, now=window.end)
        parts = _configured_parts(p, document, window.end)
        days_of = by_day.get(key, {})
        total = DayCounts()
        series = []
        for day in dates:
            counts = days_of.get(day) or DayCounts()
            total.add(counts)
            series.append(
                {
                    "day": day.isoformat(),
                    "decisions": counts.decisions,
                    **{kind: getattr(counts, kind) for kind in RULED_BY},
                    "with_candidate": counts.with_candidate,
                    "overridden": counts.overridden,
                    "override_rate": _rate(counts.overridden, counts.with_candidate),
                    "needs_candidate": counts.needs_candidate,
                }
            )
        traffic = _traffic(total)
        live_rules = [r for r in parts["rules"] if r["mode"] != "off"]
        hits, wins = total.rule_hits, total.rule_decided
        ranked = sorted(hits.items(), key=lambda item: (-item[1], item[0]))[:TOP_RULES]
        top = [{"key": k, "hits": n, "decided": wins.get(k, 0)} for k, n in ranked]
        lists = {kl["key"] for kl in parts["keyword_lists"]}
        thresholds = {t["key"] for t in parts["thresholds"]}
        record = records_by_key.get(key)
        out.append(
            {
                "key": key,
                "name": p.get("name", ""),
                "governance": governance.kind,
                "reasons": list(governance.reasons),
                "candidate_whitelist": list(p.get("candidate_whitelist", [])),
                "default_outcome": p.get("default_outcome", ""),
                "when_no_candidate": p.get("when_no_candidate", ""),
                **parts,
                **traffic,
                "daily": series,
                "ghost_failures": ghosts.get(key, {}).get("count", 0),
                "ghost_failures_latest": ghosts.get(key, {}).get("latest", []),
                "top_rules": top,
                "dead_rules": [r["key"] for r in live_rules if hits.get(r["key"], 0) == 0],
                "shadowed_rules": [{"key": s.key, "by": s.by, "why": s.why} for s in shadowed_rules(p, document)],
                "pending_changes": _pending(key, lists, thresholds, open_requests),
                "last_change": _last_change(record, lists, thresholds) if record is not None else None,
            }
        )
    summary = Counter(p["governance"] for p in out)
    revision = revision_latest()
    report = {
        "generated_at": _iso(window.end),
        "window": {**window.as_dict(), "rolled_up_days": rolled_up},
        "revision": revision.number if revision is not None else None,
        "governance": {kind: summary.get(kind, 0) for kind in GOVERNANCE_KINDS},
        "ghost_failure_seconds": settings.ARBITER_GHOST_FAILURE_SECONDS,
        "points": out,
    }
    if with_changes:
        report["since_snapshot"] = since_snapshot(report, before=window.end, point=point)
    return report

"""The decision-point map: per decision point, who decides there and how well that is governed, built
from the live configuration and the decision log (docs/report.md says what every field means).

``decision_map`` is a selector: it reads and never writes. The window runs from exactly ``days`` × 24
hours before ``now`` (inclusive) to ``now`` (inclusive), ``now`` being the moment of the request; the
per-day series and ``needs_candidate`` (kept as a count per UTC day) are by UTC day. Anomalies belong to
the ``agents`` app, which this one does not import: they are asked for with the ``report_counting``
signal.

It counts the log directly (grouped by point, day and kind of ruling; the matched rules are read row by
row). Daily rollups for very large logs are not built yet.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from rules.errors import InvalidRequest, UnknownPoint
from rules.models import (
    OPEN_STATES,
    CandidateRequestCount,
    ChangeRequest,
    Condition,
    DecisionPoint,
    DecisionRecord,
    KeywordList,
    KeywordTerm,
    Rule,
    RuledBy,
    Threshold,
)
from rules.reports.classify import (
    GOVERNANCE_KINDS,
    point_governance,
    rule_in_effect,
    shadowed_rules,
)
from rules.selectors import config_document, revision_latest
from rules.signals import report_counting

DAYS_DEFAULT = 14
DAYS_MIN = 1
DAYS_MAX = 90
RULED_BY = tuple(RuledBy.values)
TOP_RULES = 10


@dataclass(frozen=True)
class Window:
    start: dt.datetime
    end: dt.datetime
    days: int

    def dates(self) -> list[dt.date]:
        """The UTC days the window touches, oldest first."""
        first, last = self.start.astimezone(dt.UTC).date(), self.end.astimezone(dt.UTC).date()
        return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]

    def as_dict(self) -> dict[str, Any]:
        return {"days": self.days, "start": _iso(self.start), "end": _iso(self.end)}


def _iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def days_parse(raw: Any) -> int:
    """The ``days`` parameter: a whole number from 1 to 90, 14 when absent; ``InvalidRequest`` otherwise."""
    if raw is None or raw == "":
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


def _empty_traffic() -> dict[str, Any]:
    return {
        "decisions": 0,
        "by_ruled_by": dict.fromkeys(RULED_BY, 0),
        "with_candidate": 0,
        "overridden": 0,
        "override_rate": None,
        "llm_calls_avoided": 0,
        "needs_candidate": 0,
        "anomalies": 0,
        "anomalies_by_code": {},
        "tokens": {"prompt": 0, "completion": 0, "total": 0},
    }


Daily = dict[str, dict[dt.date, dict[str, int]]]


def _day_counts() -> dict[str, int]:
    return {"decisions": 0, **dict.fromkeys(RULED_BY, 0), "with_candidate": 0, "overridden": 0}


def _traffic(records: Any) -> tuple[dict[str, dict[str, Any]], Daily]:
    """Per point: the window's totals, and per UTC day the counts the charts draw."""
    rows = (
        records.annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values("point", "day", "ruled_by")
        .annotate(
            n=Count("id"),
            with_candidate=Count("id", filter=~Q(candidate_decision="")),
            overridden=Count("id", filter=Q(overridden=True)),
            avoided=Count("id", filter=Q(candidate_decision="", candidate_raw="", candidate_invalid=False)),
            prompt=Sum("tokens_prompt"),
            completion=Sum("tokens_completion"),
        )
        .order_by()
    )
    totals: dict[str, dict[str, Any]] = defaultdict(_empty_traffic)
    daily: Daily = defaultdict(dict)
    for row in rows:
        t = totals[row["point"]]
        t["decisions"] += row["n"]
        t["by_ruled_by"][row["ruled_by"]] = t["by_ruled_by"].get(row["ruled_by"], 0) + row["n"]
        t["with_candidate"] += row["with_candidate"]
        t["overridden"] += row["overridden"]
        t["llm_calls_avoided"] += row["avoided"]
        t["tokens"]["prompt"] += row["prompt"] or 0
        t["tokens"]["completion"] += row["completion"] or 0
        day = daily[row["point"]].setdefault(row["day"], _day_counts())
        day["decisions"] += row["n"]
        day[row["ruled_by"]] = day.get(row["ruled_by"], 0) + row["n"]
        day["with_candidate"] += row["with_candidate"]
        day["overridden"] += row["overridden"]
    return totals, daily


def _rule_hits(records: Any) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Per point: how often each rule held (enforcing or shadow, as logged), and how often it decided."""
    held: dict[str, Counter[str]] = defaultdict(Counter)
    for point, matched in (
        records.exclude(matched_rules=[]).values_list("point", "matched_rules").iterator(chunk_size=2000)
    ):
        for m in matched or []:
            if isinstance(m, dict) and isinstance(m.get("key"), str):
                held[point][m["key"]] += 1
    decided: dict[str, Counter[str]] = defaultdict(Counter)
    rows = records.filter(ruled_by=RuledBy.HARD_RULE).values("point", "rule_key").annotate(n=Count("id")).order_by()
    for row in rows:
        decided[row["point"]][row["rule_key"]] += row["n"]
    return held, decided


def _needs_candidate(window: Window, points: Iterable[str] | None) -> tuple[Counter[str], dict[str, Counter[dt.date]]]:
    days = window.dates()
    rows = CandidateRequestCount.objects.filter(day__gte=days[0], day__lte=days[-1])
    if points is not None:
        rows = rows.filter(point__in=list(points))
    total: Counter[str] = Counter()
    per_day: dict[str, Counter[dt.date]] = defaultdict(Counter)
    for row in rows.values("point", "day").annotate(n=Sum("count")).order_by():
        total[row["point"]] += row["n"]
        per_day[row["point"]][row["day"]] += row["n"]
    return total, per_day


def _anomalies(window: Window, points: list[str] | None) -> dict[str, Counter[str]]:
    """Point → anomaly code → count, from whichever app records anomalies (``report_counting``)."""
    found: dict[str, Counter[str]] = defaultdict(Counter)
    for _receiver, answer in report_counting.send(sender=None, start=window.start, end=window.end, points=points):
        if isinstance(answer, dict):
            for point, codes in answer.items():
                found[point].update(codes)
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
    label = {"rule": f"rule {getattr(row, 'key', '')}", "condition": "a condition", "point": "the point"}.get(
        kind, f"{kind.replace('_', ' ')} {getattr(row, 'key', '')}".strip()
    )
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


def decision_map(*, days: int = DAYS_DEFAULT, point: str = "", now: dt.datetime | None = None) -> dict[str, Any]:
    """The decision-point map over the last ``days`` days up to ``now`` (default: this moment), for every
    configured point or only ``point``. Plain JSON-safe data; see docs/report.md."""
    window = report_window(days=days, now=now)
    document = config_document()
    points = document["points"]
    if point:
        points = [p for p in points if p["key"] == point]
        if not points:
            raise UnknownPoint(f"There is no decision point '{point}'.")
    records = DecisionRecord.objects.filter(created_at__gte=window.start, created_at__lte=window.end)
    scope = [p["key"] for p in points] if point else None
    if scope is not None:
        records = records.filter(point__in=scope)
    totals, daily = _traffic(records)
    held, decided = _rule_hits(records)
    needs, needs_daily = _needs_candidate(window, scope)
    anomalies = _anomalies(window, scope)
    open_requests = list(ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk"))
    records_by_key = {p.key: p for p in DecisionPoint.objects.filter(key__in=[p["key"] for p in points])}
    dates = window.dates()

    out = []
    for p in points:
        key = p["key"]
        governance = point_governance(p, document, now=window.end)
        parts = _configured_parts(p, document, window.end)
        traffic = totals.get(key) or _empty_traffic()
        traffic["override_rate"] = _rate(traffic["overridden"], traffic["with_candidate"])
        traffic["needs_candidate"] = needs.get(key, 0)
        codes = anomalies.get(key, Counter())
        traffic["anomalies"] = sum(codes.values())
        traffic["anomalies_by_code"] = dict(sorted(codes.items()))
        traffic["tokens"]["total"] = traffic["tokens"]["prompt"] + traffic["tokens"]["completion"]
        days_of = daily.get(key, {})
        series = []
        for day in dates:
            counts = days_of.get(day) or {
                "decisions": 0,
                **dict.fromkeys(RULED_BY, 0),
                "with_candidate": 0,
                "overridden": 0,
            }
            series.append(
                {
                    "day": day.isoformat(),
                    **counts,
                    "override_rate": _rate(counts["overridden"], counts["with_candidate"]),
                    "needs_candidate": needs_daily.get(key, Counter()).get(day, 0),
                }
            )
        live_rules = [r for r in parts["rules"] if r["mode"] != "off"]
        hits = held.get(key, Counter())
        wins = decided.get(key, Counter())
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
                "top_rules": top,
                "dead_rules": [r["key"] for r in live_rules if hits.get(r["key"], 0) == 0],
                "shadowed_rules": [{"key": s.key, "by": s.by, "why": s.why} for s in shadowed_rules(p, document)],
                "pending_changes": _pending(key, lists, thresholds, open_requests),
                "last_change": _last_change(record, lists, thresholds) if record is not None else None,
            }
        )
    summary = Counter(p["governance"] for p in out)
    revision = revision_latest()
    return {
        "generated_at": _iso(window.end),
        "window": window.as_dict(),
        "revision": revision.number if revision is not None else None,
        "governance": {kind: summary.get(kind, 0) for kind in GOVERNANCE_KINDS},
        "points": out,
    }

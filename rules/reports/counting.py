"""Counting the decision log for the decision-point map, by day in the project's ``TIME_ZONE``.

One function counts a stretch of the log directly (``count_range``); the daily rollups
(``rules.reports.rollups``) store exactly what it returns for a whole closed day, and the report
(``rules.reports.decision_map``) adds rollups for the whole closed days inside its window to direct
counts of the rest — the partial first day, today so far, and any day whose rollup is missing. Because
both sides use this one function, a rollup equals a direct count of its day by construction
(``tests/rules/reports/test_rollups.py`` checks it against a row-by-row count as well).

A stretch is half-open, ``[start, end)``, and lies within one local day. Anomalies belong to the
``agents`` app, asked for with the ``report_counting`` signal (whose ``end`` is inclusive: this module
passes ``end`` less one microsecond, the resolution of both databases' timestamps).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.db.models import Count, Q, Sum

from rules.hooks import report_counting
from rules.models import CandidateRequestCount, DecisionRecord, RuledBy

RULED_BY = tuple(RuledBy.values)
TICK = dt.timedelta(microseconds=1)
# What is counted per (model, prompt version) of a point: enough for its override and anomaly rates.
LLM_NUMBERS = ("decisions", "with_candidate", "overridden", "anomalies")
LlmKey = tuple[str, str]  # (model, prompt version) as logged; "" where the agent sent none


def report_time_zone() -> tuple[str, ZoneInfo]:
    """The name and zone the report's days are taken in: the project's ``TIME_ZONE``."""
    return settings.TIME_ZONE, ZoneInfo(settings.TIME_ZONE)


def day_bounds(day: dt.date, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    """A local day as ``[its first moment, the next day's first moment)`` in UTC (23 or 25 hours long
    on the days clocks change)."""
    start = dt.datetime.combine(day, dt.time(0), tzinfo=tz).astimezone(dt.UTC)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0), tzinfo=tz).astimezone(dt.UTC)
    return start, end


@dataclass
class DayCounts:
    """What the report counts for one point over a stretch of one day."""

    decisions: int = 0
    hard_rule: int = 0
    llm_candidate: int = 0
    default: int = 0
    with_candidate: int = 0
    overridden: int = 0
    llm_calls_avoided: int = 0
    needs_candidate: int = 0
    tokens_prompt: int = 0
    tokens_completion: int = 0
    anomalies: Counter[str] = field(default_factory=Counter)
    rule_hits: Counter[str] = field(default_factory=Counter)
    rule_decided: Counter[str] = field(default_factory=Counter)
    # (model, prompt version) → LLM_NUMBERS: the rates by the model and prompt that made the candidates.
    by_llm: dict[LlmKey, Counter[str]] = field(default_factory=dict)

    def llm(self, key: LlmKey) -> Counter[str]:
        return self.by_llm.setdefault(key, Counter())

    def add(self, other: DayCounts) -> None:
        for name in NUMBERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.anomalies.update(other.anomalies)
        self.rule_hits.update(other.rule_hits)
        self.rule_decided.update(other.rule_decided)
        for key, numbers in other.by_llm.items():
            self.llm(key).update(numbers)

    def subtract(self, other: DayCounts) -> None:
        """Take away a part counted on its own (the stretch of a rolled-up day outside a window); the
        needs_candidate counters are per date and stay whole."""
        for name in NUMBERS:
            if name != "needs_candidate":
                setattr(self, name, getattr(self, name) - getattr(other, name))
        for mine, theirs in (
            (self.anomalies, other.anomalies),
            (self.rule_hits, other.rule_hits),
            (self.rule_decided, other.rule_decided),
        ):
            mine.subtract(theirs)
            for key in [k for k, n in mine.items() if n == 0]:
                del mine[key]
        for llm, numbers in other.by_llm.items():
            mine_llm = self.llm(llm)
            mine_llm.subtract(numbers)
            if not any(mine_llm.values()):
                del self.by_llm[llm]

    def as_row(self) -> dict[str, Any]:
        """The columns of a ``DecisionRollup`` row."""
        return {
            **{name: getattr(self, name) for name in NUMBERS},
            "anomalies": dict(sorted(self.anomalies.items())),
            "rule_hits": dict(sorted(self.rule_hits.items())),
            "rule_decided": dict(sorted(self.rule_decided.items())),
            "by_llm": [
                {"model": model, "prompt_version": version, **{n: numbers[n] for n in LLM_NUMBERS}}
                for (model, version), numbers in sorted(self.by_llm.items())
            ],
        }

    @classmethod
    def from_row(cls, row: Any) -> DayCounts:
        return cls(
            **{name: getattr(row, name) for name in NUMBERS},
            anomalies=Counter(row.anomalies or {}),
            rule_hits=Counter(row.rule_hits or {}),
            rule_decided=Counter(row.rule_decided or {}),
            by_llm={
                (r["model"], r["prompt_version"]): Counter({n: r.get(n, 0) for n in LLM_NUMBERS})
                for r in row.by_llm or []
            },
        )


NUMBERS = (
    "decisions",
    *RULED_BY,
    "with_candidate",
    "overridden",
    "llm_calls_avoided",
    "needs_candidate",
    "tokens_prompt",
    "tokens_completion",
)


def _held_sql(inner: str) -> str:
    """Per point and rule key: how many elements of ``matched_rules`` name the rule (objects with a
    string ``key`` only, as the log writes them), counted in the database rather than row by row."""
    if connection.vendor == "postgresql":
        return (
            f"SELECT s.point, e.value ->> 'key', COUNT(*) FROM ({inner}) s "  # noqa: S608 - inner is ORM-built
            "CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(s.matched_rules) = 'array' "
            "THEN s.matched_rules ELSE '[]'::jsonb END) e "
            "WHERE jsonb_typeof(e.value -> 'key') = 'string' GROUP BY 1, 2"
        )
    return (
        f"SELECT s.point, json_extract(e.value, '$.key'), COUNT(*) FROM ({inner}) s, "  # noqa: S608
        "json_each(CASE WHEN json_type(s.matched_rules) = 'array' THEN s.matched_rules ELSE '[]' END) e "
        "WHERE e.type = 'object' AND json_type(e.value, '$.key') = 'text' GROUP BY 1, 2"
    )


def count_range(start: dt.datetime, end: dt.datetime, points: Sequence[str] | None = None) -> dict[str, DayCounts]:
    """Point → counts of the decisions logged in ``[start, end)`` (and the anomalies recorded then);
    ``points`` limits it to those keys. ``needs_candidate`` is not set here: it is kept per date
    (``needs_by_date``)."""
    records = DecisionRecord.objects.filter(created_at__gte=start, created_at__lt=end)
    if points is not None:
        records = records.filter(point__in=list(points))
    counts: dict[str, DayCounts] = defaultdict(DayCounts)
    rows = (
        records.values("point", "ruled_by", "rule_key", "llm_model", "llm_prompt_version")
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
    for row in rows:
        c = counts[row["point"]]
        c.decisions += row["n"]
        if row["ruled_by"] in RULED_BY:
            setattr(c, row["ruled_by"], getattr(c, row["ruled_by"]) + row["n"])
        if row["ruled_by"] == RuledBy.HARD_RULE:
            c.rule_decided[row["rule_key"]] += row["n"]
        c.with_candidate += row["with_candidate"]
        c.overridden += row["overridden"]
        c.llm_calls_avoided += row["avoided"]
        c.tokens_prompt += row["prompt"] or 0
        c.tokens_completion += row["completion"] or 0
        llm = c.llm((row["llm_model"], row["llm_prompt_version"]))
        llm["decisions"] += row["n"]
        llm["with_candidate"] += row["with_candidate"]
        llm["overridden"] += row["overridden"]
    inner, params = records.values("point", "matched_rules").order_by().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(_held_sql(inner), params)
        for point, key, n in cursor.fetchall():
            counts[point].rule_hits[key] += n
    answers = report_counting.ask(start=start, end=end - TICK, points=list(points) if points is not None else None)
    for answer in answers:
        if isinstance(answer, dict):
            for point, raised in answer.items():
                for code, model, version, n in raised:
                    counts[point].anomalies[code] += n
                    counts[point].llm((model, version))["anomalies"] += n
    return dict(counts)


def needs_by_date(dates: Iterable[dt.date], points: Sequence[str] | None = None) -> dict[str, Counter[dt.date]]:
    """Point → date → "ask your LLM" answers. The counters are kept per date as the decide path stamps
    it (the UTC date of the answer), so a date is counted whole."""
    wanted = sorted(set(dates))
    per_day: dict[str, Counter[dt.date]] = defaultdict(Counter)
    if not wanted:
        return per_day
    rows = CandidateRequestCount.objects.filter(day__in=wanted)
    if points is not None:
        rows = rows.filter(point__in=list(points))
    for row in rows.values("point", "day").annotate(n=Sum("count")).order_by():
        per_day[row["point"]][row["day"]] += row["n"]
    return per_day

"""Daily rollups equal a direct count: the report built from rollups for its whole closed days (and a
direct count of the rest) is the report built from the log alone, and both equal a row-by-row count —
at the window's edges, at day boundaries in a time zone other than UTC (and on a day the clocks
change), with a day's rollup missing, and after rows arrive late for a closed day."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly
from rules.config.yaml_import import config_import
from rules.decisions.retention import decision_log_purge
from rules.models import CandidateRequestCount, DecisionRecord, DecisionRollup, DecisionRollupDay
from rules.reports.decision_map import decision_map
from rules.reports.rollups import (
    OpenDay,
    decision_rollup_day,
    decision_rollups_rebuild,
    decision_rollups_refresh,
)
from tests.support.reports import CONFIG

pytestmark = pytest.mark.django_db

TICK = dt.timedelta(microseconds=1)
SHANGHAI = ZoneInfo("Asia/Shanghai")
# Local midnight in Shanghai is 16:00 UTC the day before.
NOW = dt.datetime(2026, 6, 15, 12, 0, tzinfo=dt.UTC)  # 20:00 in Shanghai, 15 June
MIDNIGHT_14 = dt.datetime(2026, 6, 14, tzinfo=SHANGHAI).astimezone(dt.UTC)


@pytest.fixture
def shanghai(settings):
    settings.TIME_ZONE = "Asia/Shanghai"


@pytest.fixture
def config(actor):
    return config_import(text=CONFIG, source="test", actor=actor, reason="rollup fixture")


@pytest.fixture
def agent(db):
    return AgentRuntime.objects.create(name="bot")


def log(at, point="guarded", ruled_by="default", decision="clarify", matched=(), **kw):
    return DecisionRecord.objects.create(
        created_at=at,
        point=point,
        agent_name="bot",
        decision=decision,
        ruled_by=ruled_by,
        revision=1,
        matched_rules=[{"key": k, "priority": 0, "category": "quality", "outcome": decision} for k in matched],
        **kw,
    )


def anomaly(agent, at, point="guarded", code="invalid_candidate_output"):
    made = Anomaly.objects.create(agent=agent, point=point, code=code)
    Anomaly.objects.filter(pk=made.pk).update(created_at=at)


def row_by_row(point: str, start: dt.datetime, end: dt.datetime, dates: list[dt.date]) -> dict:
    """The report's traffic fields for ``point`` over ``[start, end]``, counted one row at a time."""
    rows = [r for r in DecisionRecord.objects.filter(point=point) if start <= r.created_at <= end]
    hits: Counter[str] = Counter(m["key"] for r in rows for m in r.matched_rules)
    decided = Counter(r.rule_key for r in rows if r.ruled_by == "hard_rule")
    with_candidate = sum(1 for r in rows if r.candidate_decision)
    overridden = sum(1 for r in rows if r.overridden)
    codes = Counter(a.code for a in Anomaly.objects.filter(point=point) if start <= a.created_at <= end)
    return {
        "decisions": len(rows),
        "by_ruled_by": {k: sum(1 for r in rows if r.ruled_by == k) for k in ("hard_rule", "llm_candidate", "default")},
        "with_candidate": with_candidate,
        "overridden": overridden,
        "override_rate": None if not with_candidate else round(overridden / with_candidate, 4),
        "llm_calls_avoided": sum(
            1 for r in rows if not r.candidate_decision and not r.candidate_raw and not r.candidate_invalid
        ),
        "needs_candidate": sum(
            c.count for c in CandidateRequestCount.objects.filter(point=point) if c.day in set(dates)
        ),
        "anomalies": sum(codes.values()),
        "anomalies_by_code": dict(sorted(codes.items())),
        "tokens": {
            "prompt": sum(r.tokens_prompt or 0 for r in rows),
            "completion": sum(r.tokens_completion or 0 for r in rows),
            "total": sum((r.tokens_prompt or 0) + (r.tokens_completion or 0) for r in rows),
        },
        "hits": dict(hits),
        "decided": {k: n for k, n in decided.items() if k and k in hits},
    }


TRAFFIC = (
    "decisions",
    "by_ruled_by",
    "with_candidate",
    "overridden",
    "override_rate",
    "llm_calls_avoided",
    "needs_candidate",
    "anomalies",
    "anomalies_by_code",
    "tokens",
)


def traffic_of(report: dict, point: str) -> dict:
    p = next(p for p in report["points"] if p["key"] == point)
    out = {k: p[k] for k in TRAFFIC}
    out["hits"] = {r["key"]: r["hits"] for r in p["top_rules"]}
    out["decided"] = {r["key"]: r["decided"] for r in p["top_rules"] if r["decided"]}
    return out


def without_source(report: dict) -> dict:
    """The report without the one field that says how it was counted."""
    return {**report, "window": {k: v for k, v in report["window"].items() if k != "rolled_up_days"}}


@pytest.fixture
def boundaries(config, agent, shanghai):
    """Rows on both sides of Shanghai's midnights and of the window's edges (days=2 from NOW)."""
    start = NOW - dt.timedelta(days=2)  # 20:00 on 13 June in Shanghai
    for at in (
        start - TICK,  # before the window
        start,  # the window's first moment (a partial day)
        MIDNIGHT_14 - TICK,  # the partial first day's last moment
        MIDNIGHT_14,  # the first whole day's first moment
        MIDNIGHT_14 + dt.timedelta(hours=23, minutes=59, seconds=59, microseconds=999_999),
        MIDNIGHT_14 + dt.timedelta(days=1),  # today (15 June, Shanghai) from its first moment
        NOW,  # the request
        NOW + TICK,  # after it
    ):
        log(
            at,
            ruled_by="hard_rule",
            decision="handoff",
            rule_key="complaint",
            matched=["complaint", "trial"],
            candidate_decision="answer",
            overridden=True,
            tokens_prompt=10,
            tokens_completion=1,
        )
        anomaly(agent, at)
    log(MIDNIGHT_14 + dt.timedelta(hours=3), ruled_by="llm_candidate", decision="answer", candidate_decision="answer")
    log(MIDNIGHT_14 + dt.timedelta(hours=4))  # no candidate: an LLM call avoided
    log(
        MIDNIGHT_14 + dt.timedelta(hours=5),
        point="open",
        ruled_by="llm_candidate",
        decision="answer",
        candidate_decision="answer",
        candidate_confidence=0.9,
    )
    for day, n in ((dt.date(2026, 6, 13), 2), (dt.date(2026, 6, 14), 3), (dt.date(2026, 6, 15), 4)):
        CandidateRequestCount.objects.create(point="guarded", agent_id=agent.pk, day=day, count=n)


def test_a_rollup_is_a_direct_count_of_its_local_day(boundaries):
    decision_rollup_day(day=dt.date(2026, 6, 14), now=NOW)
    marker = DecisionRollupDay.objects.get(day=dt.date(2026, 6, 14))
    assert (marker.time_zone, marker.start, marker.end) == (
        "Asia/Shanghai",
        MIDNIGHT_14,
        MIDNIGHT_14 + dt.timedelta(days=1),
    )
    guarded = DecisionRollup.objects.get(rollup_day=marker, point="guarded")
    # The first whole day holds its first and last moments, not the moment before or after.
    assert (guarded.decisions, guarded.hard_rule, guarded.llm_candidate, guarded.default) == (4, 2, 1, 1)
    assert (guarded.with_candidate, guarded.overridden, guarded.llm_calls_avoided) == (3, 2, 1)
    assert (guarded.tokens_prompt, guarded.tokens_completion, guarded.needs_candidate) == (20, 2, 3)
    assert guarded.anomalies == {"invalid_candidate_output": 2}
    assert guarded.rule_hits == {"complaint": 2, "trial": 2}
    assert guarded.rule_decided == {"complaint": 2}
    assert DecisionRollup.objects.get(rollup_day=marker, point="open").llm_candidate == 1


def test_the_report_from_rollups_equals_the_direct_count_at_every_edge(boundaries):
    direct = decision_map(days=2, now=NOW)
    assert direct["window"]["rolled_up_days"] == 0
    decision_rollups_rebuild(first=dt.date(2026, 6, 10), last=dt.date(2026, 6, 20), now=NOW)
    # Only closed days: 15 June has not ended in Shanghai.
    assert sorted(DecisionRollupDay.objects.values_list("day", flat=True)) == [
        dt.date(2026, 6, d) for d in range(10, 15)
    ]
    rolled = decision_map(days=2, now=NOW)
    assert rolled["window"]["rolled_up_days"] == 1  # 14 June; 13 June is partial, 15 June is today
    assert without_source(rolled) == without_source(direct)
    expected = row_by_row("guarded", NOW - dt.timedelta(days=2), NOW, [dt.date(2026, 6, d) for d in (13, 14, 15)])
    assert traffic_of(rolled, "guarded") == expected
    assert expected["decisions"] == 8 and expected["anomalies"] == 6
    assert [d["day"] for d in rolled["points"][0]["daily"]] == ["2026-06-13", "2026-06-14", "2026-06-15"]
    assert [d["decisions"] for d in rolled["points"][0]["daily"]] == [2, 4, 2]


def test_a_missing_rollup_day_is_counted_directly_never_as_zero(boundaries):
    decision_rollups_rebuild(first=dt.date(2026, 6, 1), last=dt.date(2026, 6, 14), now=NOW)
    whole = decision_map(days=3, now=NOW)
    DecisionRollupDay.objects.filter(day=dt.date(2026, 6, 14)).delete()
    missing = decision_map(days=3, now=NOW)
    assert missing["window"]["rolled_up_days"] == whole["window"]["rolled_up_days"] - 1
    assert without_source(missing) == without_source(whole)
    assert traffic_of(missing, "guarded")["decisions"] == 9  # the 3-day window holds the row before 2 days too


def test_rows_arriving_late_for_a_closed_day_are_counted_when_it_is_recomputed(boundaries):
    decision_rollups_rebuild(first=dt.date(2026, 6, 14), last=dt.date(2026, 6, 14), now=NOW)
    # A transaction that began before midnight and committed after the rollup was built.
    log(MIDNIGHT_14 + dt.timedelta(hours=12), ruled_by="default", candidate_decision="answer", overridden=True)
    stale = decision_map(days=2, now=NOW)
    assert traffic_of(stale, "guarded")["decisions"] == 8  # the rollup does not know it yet
    assert decision_rollups_refresh(now=NOW, horizon=3) == [dt.date(2026, 6, d) for d in (12, 13, 14)]
    fresh = decision_map(days=2, now=NOW)
    assert traffic_of(fresh, "guarded") == row_by_row(
        "guarded", NOW - dt.timedelta(days=2), NOW, [dt.date(2026, 6, d) for d in (13, 14, 15)]
    )
    assert traffic_of(fresh, "guarded")["decisions"] == 9


def test_recomputing_a_day_replaces_its_rows(boundaries):
    day = dt.date(2026, 6, 14)
    assert decision_rollup_day(day=day, now=NOW) == decision_rollup_day(day=day, now=NOW) == 2
    assert DecisionRollupDay.objects.filter(day=day).count() == 1
    assert DecisionRollup.objects.filter(rollup_day__day=day).count() == 2


def test_the_refresh_fills_missing_days_and_recomputes_only_the_recent_ones(boundaries):
    assert len(decision_rollups_refresh(now=NOW, horizon=5)) == 5
    first = dict(DecisionRollupDay.objects.values_list("day", "computed_at"))
    later = NOW + dt.timedelta(hours=1)
    assert decision_rollups_refresh(now=later, horizon=5) == [dt.date(2026, 6, 13), dt.date(2026, 6, 14)]
    second = dict(DecisionRollupDay.objects.values_list("day", "computed_at"))
    assert second[dt.date(2026, 6, 10)] == first[dt.date(2026, 6, 10)]
    assert second[dt.date(2026, 6, 14)] == later


def test_an_open_day_is_not_rolled_up(boundaries):
    with pytest.raises(OpenDay):
        decision_rollup_day(day=dt.date(2026, 6, 15), now=NOW)
    assert not DecisionRollupDay.objects.exists()


def test_rollups_of_another_time_zone_are_not_read(boundaries, settings):
    decision_rollups_rebuild(first=dt.date(2026, 6, 10), last=dt.date(2026, 6, 14), now=NOW)
    settings.TIME_ZONE = "UTC"
    report = decision_map(days=3, now=NOW)
    assert report["window"]["rolled_up_days"] == 0
    assert report["window"]["time_zone"] == "UTC"
    assert traffic_of(report, "guarded")["decisions"] == 9


def test_the_retention_sweep_forgets_the_rollups_of_the_days_it_purges(boundaries, settings):
    decision_rollups_rebuild(first=dt.date(2026, 6, 10), last=dt.date(2026, 6, 14), now=NOW)
    # The cutoff falls inside 14 June (Shanghai): that day and every one before lose their rollups.
    decision_log_purge(older_than_days=1, now=MIDNIGHT_14 + dt.timedelta(days=1, hours=1))
    assert sorted(DecisionRollupDay.objects.values_list("day", flat=True)) == []
    report = decision_map(days=2, now=NOW)
    assert traffic_of(report, "guarded") == row_by_row(
        "guarded", NOW - dt.timedelta(days=2), NOW, [dt.date(2026, 6, d) for d in (13, 14, 15)]
    )


def test_a_day_the_clocks_change_is_rolled_up_whole(config, agent, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    berlin = ZoneInfo("Europe/Berlin")
    # 29 March 2026: clocks go forward; the day is 23 hours long.
    first = dt.datetime(2026, 3, 29, tzinfo=berlin).astimezone(dt.UTC)
    after = dt.datetime(2026, 3, 30, tzinfo=berlin).astimezone(dt.UTC)
    assert after - first == dt.timedelta(hours=23)
    for at in (first - TICK, first, after - TICK, after):
        log(at, ruled_by="default")
    now = dt.datetime(2026, 3, 31, 12, tzinfo=dt.UTC)
    direct = decision_map(days=3, now=now)
    decision_rollup_day(day=dt.date(2026, 3, 29), now=now)
    assert DecisionRollup.objects.get(rollup_day__day=dt.date(2026, 3, 29), point="guarded").decisions == 2
    rolled = decision_map(days=3, now=now)
    assert rolled["window"]["rolled_up_days"] == 1
    assert without_source(rolled) == without_source(direct)


EPOCH = dt.datetime(2026, 6, 10, tzinfo=dt.UTC)
moments = st.integers(min_value=0, max_value=6 * 86_400_000_000 - 1).map(
    lambda us: EPOCH + dt.timedelta(microseconds=us)
)
rows = st.fixed_dictionaries(
    {
        "at": moments,
        "point": st.sampled_from(["guarded", "open", "half"]),
        "kind": st.sampled_from(["hard_rule", "llm_candidate", "default", "avoided", "invalid"]),
        "matched": st.lists(st.sampled_from(["complaint", "trial", "low_confidence"]), max_size=2),
        "tokens": st.none() | st.integers(min_value=0, max_value=500),
    }
)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    log_rows=st.lists(rows, max_size=30),
    now=moments,
    days=st.integers(min_value=1, max_value=5),
    zone=st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York"]),
)
def test_rollups_equal_a_direct_count_on_any_log(config, agent, settings, log_rows, now, days, zone):
    settings.TIME_ZONE = zone
    DecisionRecord.objects.all().delete()
    DecisionRollupDay.objects.all().delete()
    Anomaly.objects.all().delete()
    for r in log_rows:
        kind = r["kind"]
        kw = {"candidate_decision": "answer", "tokens_prompt": r["tokens"], "tokens_completion": r["tokens"]}
        if kind == "avoided":
            kw = {}
        elif kind == "invalid":
            kw = {"candidate_raw": "???", "candidate_invalid": True}
            anomaly(agent, r["at"], point=r["point"])
        ruled_by = "default" if kind in {"avoided", "invalid"} else kind
        log(
            r["at"],
            point=r["point"],
            ruled_by=ruled_by,
            rule_key="complaint" if ruled_by == "hard_rule" else "",
            overridden=ruled_by == "hard_rule" and "candidate_decision" in kw,
            matched=r["matched"],
            **kw,
        )
    direct = decision_map(days=days, now=now)
    decision_rollups_refresh(now=now, horizon=8)
    rolled = decision_map(days=days, now=now)
    assert without_source(rolled) == without_source(direct)
    dates = [dt.date.fromisoformat(d["day"]) for d in direct["points"][0]["daily"]]
    for point in ("guarded", "open", "half"):
        assert traffic_of(rolled, point) == row_by_row(point, now - dt.timedelta(days=days), now, dates)


def test_the_thin_tasks_take_a_date_and_run_the_services(boundaries):
    from rules import tasks

    assert tasks.decision_rollup_day.apply(args=["2026-06-14"]).get() == 2
    assert DecisionRollup.objects.filter(rollup_day__day=dt.date(2026, 6, 14)).count() == 2
    days = tasks.decision_rollups_refresh.apply().get()
    assert len(days) == 90 and all(isinstance(d, str) for d in days)  # today's horizon: none rolled up yet

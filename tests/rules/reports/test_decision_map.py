"""The decision-point map on a constructed configuration and a constructed log: every count exact,
including the window's edges (one microsecond inside and outside each end)."""

from __future__ import annotations

import datetime as dt

import pytest

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly
from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.errors import InvalidRequest, UnknownPoint
from rules.models import CandidateRequestCount, DecisionRecord
from rules.reports.decision_map import days_parse, decision_map
from tests.support.reports import CONFIG

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 6, 15, 12, 0, tzinfo=dt.UTC)
START = NOW - dt.timedelta(days=7)
TICK = dt.timedelta(microseconds=1)


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def config(actor):
    return config_import(text=CONFIG, source="test", actor=actor, reason="report fixture")


def log(at, point="guarded", ruled_by="default", decision="clarify", **kw):
    matched = [
        {"key": k, "priority": 0, "category": "quality", "outcome": decision, "shadow": k == "trial"}
        for k in kw.pop("matched", [])
    ]
    return DecisionRecord.objects.create(
        created_at=at,
        point=point,
        agent_name="bot",
        decision=decision,
        ruled_by=ruled_by,
        revision=1,
        matched_rules=matched,
        **kw,
    )


@pytest.fixture
def traffic(config):
    # Just outside both ends: never counted.
    log(START - TICK, ruled_by="hard_rule", rule_key="complaint", matched=["complaint"], candidate_decision="answer")
    log(NOW + TICK, ruled_by="llm_candidate", decision="answer", candidate_decision="answer")
    # Exactly on both ends, and between.
    log(
        START,
        ruled_by="hard_rule",
        decision="handoff",
        rule_key="complaint",
        matched=["complaint", "complaint_again"],
        candidate_decision="answer",
        candidate_confidence=0.9,
        overridden=True,
    )
    log(
        NOW,
        ruled_by="llm_candidate",
        decision="answer",
        candidate_decision="answer",
        candidate_confidence=0.9,
        matched=["trial"],
        tokens_prompt=100,
        tokens_completion=20,
    )
    log(START + dt.timedelta(days=3), ruled_by="default")  # no candidate at all: an LLM call avoided
    log(
        START + dt.timedelta(days=3, hours=1),
        ruled_by="hard_rule",
        rule_key="low_confidence",
        matched=["low_confidence", "trial"],
        candidate_decision="answer",
        candidate_confidence=0.3,
        overridden=True,
        tokens_prompt=50,
        tokens_completion=5,
    )
    log(START + dt.timedelta(days=4), ruled_by="default", candidate_raw="not json", candidate_invalid=True)
    log(
        START + dt.timedelta(days=1),
        point="open",
        ruled_by="llm_candidate",
        decision="answer",
        candidate_decision="answer",
    )
    agent = AgentRuntime.objects.create(name="bot")
    for day, count in ((START.date() - dt.timedelta(days=1), 5), (START.date(), 3), (NOW.date(), 2)):
        CandidateRequestCount.objects.create(point="guarded", agent_id=agent.pk, day=day, count=count)
    CandidateRequestCount.objects.create(point="half", agent_id=agent.pk, day=NOW.date(), count=7)
    for at, code in (
        (START - TICK, "invalid_candidate_output"),
        (START, "invalid_candidate_output"),
        (NOW, "candidate_not_an_outcome"),
        (NOW + TICK, "candidate_not_an_outcome"),
    ):
        anomaly = Anomaly.objects.create(agent=agent, point="guarded", code=code)
        Anomaly.objects.filter(pk=anomaly.pk).update(created_at=at)
    Anomaly.objects.create(agent=agent, point="", code="illegal_transition")


def by_key(report):
    return {p["key"]: p for p in report["points"]}


def test_every_count_is_exact_including_the_window_edges(traffic):
    report = decision_map(days=7, now=NOW)
    assert report["window"] == {
        "days": 7,
        "start": "2026-06-08T12:00:00Z",
        "end": "2026-06-15T12:00:00Z",
        "time_zone": "UTC",
        "rolled_up_days": 0,
    }
    guarded = by_key(report)["guarded"]
    assert guarded["decisions"] == 5
    assert guarded["by_ruled_by"] == {"hard_rule": 2, "llm_candidate": 1, "default": 2}
    assert guarded["with_candidate"] == 3
    assert guarded["overridden"] == 2
    assert guarded["override_rate"] == round(2 / 3, 4)
    assert guarded["llm_calls_avoided"] == 1
    assert guarded["needs_candidate"] == 5  # by UTC day: the window's first and last days
    assert guarded["anomalies"] == 2
    assert guarded["anomalies_by_code"] == {"candidate_not_an_outcome": 1, "invalid_candidate_output": 1}
    assert guarded["tokens"] == {"prompt": 150, "completion": 25, "total": 175}
    assert guarded["top_rules"] == [
        {"key": "trial", "hits": 2, "decided": 0},
        {"key": "complaint", "hits": 1, "decided": 1},
        {"key": "complaint_again", "hits": 1, "decided": 0},
        {"key": "low_confidence", "hits": 1, "decided": 1},
    ]
    assert guarded["dead_rules"] == []
    other = by_key(report)["open"]
    assert (other["decisions"], other["by_ruled_by"]["llm_candidate"], other["override_rate"]) == (1, 1, 0.0)
    assert other["dead_rules"] == ["complaint"]
    half = by_key(report)["half"]
    assert (half["decisions"], half["override_rate"], half["needs_candidate"]) == (0, None, 7)
    assert half["dead_rules"] == ["low_confidence"]
    assert report["governance"] == {"controlled": 1, "partial": 1, "naked": 1}


def test_the_daily_series_covers_every_local_day_the_window_touches(traffic):
    guarded = by_key(decision_map(days=7, now=NOW))["guarded"]
    days = guarded["daily"]
    assert [d["day"] for d in days] == [f"2026-06-{n:02d}" for n in range(8, 16)]
    first, last = days[0], days[-1]
    assert (first["decisions"], first["hard_rule"], first["overridden"], first["override_rate"]) == (1, 1, 1, 1.0)
    assert first["needs_candidate"] == 3
    assert (last["decisions"], last["llm_candidate"], last["override_rate"], last["needs_candidate"]) == (1, 1, 0.0, 2)
    assert days[1]["decisions"] == 0 and days[1]["override_rate"] is None
    assert sum(d["decisions"] for d in days) == guarded["decisions"]


def test_a_window_of_one_day_and_the_point_filter(traffic):
    report = decision_map(days=1, point="guarded", now=NOW)
    assert [p["key"] for p in report["points"]] == ["guarded"]
    guarded = report["points"][0]
    assert guarded["decisions"] == 1 and guarded["by_ruled_by"]["llm_candidate"] == 1
    assert guarded["needs_candidate"] == 2
    assert guarded["dead_rules"] == ["complaint", "complaint_again", "low_confidence"]
    with pytest.raises(UnknownPoint):
        decision_map(days=1, point="nowhere", now=NOW)


def test_governance_of_one_point_of_each_kind(config):
    report = by_key(decision_map(days=14, now=NOW))
    assert report["guarded"]["governance"] == "controlled"
    assert report["half"]["governance"] == "partial"
    assert "no high-risk rule (compliance, risk or hand-off) enforces at this point" in report["half"]["reasons"]
    assert report["open"]["governance"] == "naked"
    assert report["open"]["reasons"][0].startswith("a candidate from the whitelist (answer) is accepted at any")


def test_the_configuration_in_use(config):
    guarded = by_key(decision_map(days=14, now=NOW))["guarded"]
    assert guarded["rules_by_category"] == {
        "compliance": {"enforce": 1, "shadow": 0, "off": 0},
        "business": {"enforce": 1, "shadow": 0, "off": 0},
        "quality": {"enforce": 1, "shadow": 1, "off": 1},
    }
    assert guarded["keyword_lists"] == [
        {"key": "high_risk", "match": "substring", "terms": 2},
        {"key": "complaint", "match": "substring", "terms": 1},
    ]
    assert guarded["thresholds"] == [{"key": "min_confidence", "value": 0.65, "unit": "", "high_risk": True}]
    assert guarded["shadowed_rules"] == [
        {
            "key": "complaint_again",
            "by": "complaint",
            "why": "complaint (priority 10) holds whenever complaint_again (priority 20) does",
        }
    ]
    assert guarded["pending_changes"] == []
    assert guarded["last_change"]["who"] == "ops"
    assert guarded["last_change"]["reason"] == "report fixture"


@pytest.mark.parametrize("raw", ["0", "91", "-1", "1.5", "x", "１", " ", " 7", "1e1"])
def test_days_out_of_range_is_refused(raw):
    with pytest.raises(InvalidRequest) as refused:
        days_parse(raw)
    assert refused.value.errors == {"days": ["A whole number from 1 to 90."]}


def test_days_defaults_to_14_and_accepts_the_ends():
    assert (days_parse(None), days_parse("1"), days_parse("90")) == (14, 1, 90)

"""A model upgrade visible in the map: decisions made through ``POST /api/v1/decisions`` under model A
(few overrides, no anomalies) and then model B (many of both) are two rows of the point's ``by_model``
with their own override and anomaly rates — counted directly, from the daily rollup, in the staff API's
JSON and CSV, the admin's map page, and the fortnightly snapshot."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from rules.governance.tokens import staff_token_create
from rules.reports.decision_map import decision_map
from rules.reports.rollups import decision_rollup_day
from rules.reports.snapshot_jobs import decision_map_snapshot_take
from rules.reports.snapshots import snapshot_text
from tests.support import agent_api, decide

pytestmark = pytest.mark.django_db

A = {"model": "qwen2.5-72b", "prompt_version": "intent-v6", "latency_ms": 380}
B = {"model": "qwen3-max", "prompt_version": "intent-v7", "latency_ms": 510}
BENIGN = ("这个产品怎么用", {"decision": "product_info", "confidence": 0.9, "reason": "asks about use"})
COMPLAINT = ("我要投诉你们", {"decision": "general_query", "confidence": 0.9, "reason": "a question"})
NOT_AN_OUTCOME = ("这个产品怎么用", {"decision": "teleport", "confidence": 0.9, "reason": "?"})

ROW_A = {
    "model": "qwen2.5-72b",
    "prompt_version": "intent-v6",
    "decisions": 10,
    "with_candidate": 10,
    "overridden": 1,
    "override_rate": 0.1,
    "anomalies": 0,
    "anomaly_rate": 0.0,
}
ROW_B = {
    "model": "qwen3-max",
    "prompt_version": "intent-v7",
    "decisions": 10,
    "with_candidate": 10,
    "overridden": 7,
    "override_rate": 0.7,
    "anomalies": 3,
    "anomaly_rate": 0.3,
}
UNKNOWN = {
    "model": None,
    "prompt_version": None,
    "decisions": 1,
    "with_candidate": 1,
    "overridden": 0,
    "override_rate": 0.0,
    "anomalies": 0,
    "anomaly_rate": 0.0,
}


@pytest.fixture
def upgraded(demo):
    agent = agent_api()

    def turn(text_candidate, llm=None):
        text, candidate = text_candidate
        body = {"point": "intent_routing", "input": text, "candidate": candidate}
        if llm is not None:
            body["llm"] = llm
        r = decide(agent, body)
        assert r.status_code == 201, r.content

    for _ in range(9):
        turn(BENIGN, A)
    turn(COMPLAINT, A)
    for _ in range(3):
        turn(BENIGN, B)
    for _ in range(4):
        turn(COMPLAINT, B)
    for _ in range(3):
        turn(NOT_AN_OUTCOME, B)
    turn(BENIGN)  # an agent that names no model
    return timezone.now()


def _rows(report):
    return next(p for p in report["points"] if p["key"] == "intent_routing")["by_model"]


def test_a_model_upgrade_is_two_rows_with_their_own_rates(upgraded):
    report = decision_map(days=1, now=upgraded + dt.timedelta(seconds=1))
    assert _rows(report) == [ROW_A, ROW_B, UNKNOWN]
    point = next(p for p in report["points"] if p["key"] == "intent_routing")
    # The rows add up to the point's own counts.
    assert sum(r["decisions"] for r in point["by_model"]) == point["decisions"] == 21
    assert sum(r["overridden"] for r in point["by_model"]) == point["overridden"]
    assert sum(r["anomalies"] for r in point["by_model"]) == point["anomalies"]


def test_the_rollup_keeps_the_breakdown(upgraded):
    later = upgraded + dt.timedelta(days=2)
    direct = decision_map(days=5, now=later)
    assert direct["window"]["rolled_up_days"] == 0
    decision_rollup_day(day=timezone.localdate(upgraded), now=later)
    rolled = decision_map(days=5, now=later)
    assert rolled["window"]["rolled_up_days"] >= 1
    assert _rows(rolled) == _rows(direct) == [ROW_A, ROW_B, UNKNOWN]


def test_the_snapshot_carries_the_breakdown(upgraded):
    snapshot = decision_map_snapshot_take(trigger="command", now=upgraded + dt.timedelta(seconds=1))
    snapshot.refresh_from_db()
    assert _rows(snapshot.report) == [ROW_A, ROW_B, UNKNOWN]
    text = snapshot_text(snapshot.report, previous=None)
    assert "model qwen2.5-72b, prompt intent-v6: 10 decisions; override rate 10.0%; anomaly rate 0.0%" in text
    assert "model qwen3-max, prompt intent-v7: 10 decisions; override rate 70.0%; anomaly rate 30.0%" in text
    assert "model unknown, prompt unknown: 1 decisions" in text


def test_the_staff_api_and_its_csv_show_the_breakdown(upgraded, actor):
    staff = APIClient()
    staff.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=actor)}")
    r = staff.get("/api/v1/reports/decision-map", {"point": "intent_routing", "days": 1})
    assert r.status_code == 200, r.content
    assert _rows(r.json()) == [ROW_A, ROW_B, UNKNOWN]
    r = staff.get("/api/v1/reports/decision-map.csv", {"point": "intent_routing", "days": 1})
    (row,) = csv.DictReader(io.StringIO(r.content.decode()))
    assert row["by_model"] == (
        "qwen2.5-72b@intent-v6:10:0.1:0.0 qwen3-max@intent-v7:10:0.7:0.3 unknown@unknown:1:0.0:0.0"
    )


def test_the_admin_map_page_shows_the_rows(upgraded, admin_user):
    browser = Client()
    browser.force_login(admin_user)
    r = browser.get(reverse("admin:rules_decision_map"), {"point": "intent_routing", "days": 1})
    assert r.status_code == 200
    page = r.content.decode()
    for text in ("qwen2.5-72b", "intent-v6", "qwen3-max", "intent-v7", "70.0%", "30.0%"):
        assert text in page

"""``deploy/``: the Grafana dashboard and the Prometheus alert rules name only metrics ``/metrics`` shows.

The service is exercised first (a decision, a move, a refused move, a ghost failure's gauge) so that every
labelled family has a sample; then each metric a query names must be one of the exposition's sample names
(``_bucket``/``_count``/``_sum``/``_total`` included, as PromQL reads them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from agents.runtimes.models import AgentRuntime
from agents.sessions.services import session_create
from tests.support import agent_api

pytestmark = pytest.mark.django_db

DEPLOY = Path(settings.BASE_DIR) / "deploy"
DASHBOARD = DEPLOY / "grafana" / "arbiter-state-health.json"
ALERTS = DEPLOY / "prometheus" / "arbiter-alerts.yml"
METRIC = re.compile(r"\barbiter_[a-z0-9_]+\b")


def dashboard_queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = [t["expr"] for p in board["panels"] for t in p["targets"]]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            queries.append(variable["query"]["query"])
    return queries


def alert_queries() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    found = [rule for group in rules["groups"] for rule in group["rules"]]
    assert all({"alert", "expr", "labels", "annotations"} <= set(rule) for rule in found)
    return [rule["expr"] for rule in found]


def exposed(client) -> set[str]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {s.name for f in text_string_to_metric_families(response.content.decode()) for s in f.samples}


def exercise(client, django_capture_on_commit_callbacks) -> None:
    api = agent_api("deploy_bot")
    agent = AgentRuntime.objects.get(name="deploy_bot")
    with django_capture_on_commit_callbacks(execute=True):
        session_create(agent=agent, machine_key="after_sales", session_id="d1")
    with django_capture_on_commit_callbacks(execute=True):
        body = {"point": "intent_routing", "session_id": "d1", "apply": True, "input": "hi"}
        body["candidate"] = {"decision": "general_query", "confidence": 0.9}
        assert api.post("/api/v1/decisions", body, format="json").status_code == 201
        refused = api.post(
            "/api/v1/sessions/d1/transitions", {"to": "init", "expected_state": "received"}, format="json"
        )
        assert refused.status_code == 422, refused.content


def test_both_files_parse_and_name_queries():
    assert len(dashboard_queries()) >= 6
    assert len(alert_queries()) >= 4


def test_every_metric_the_dashboard_and_the_alerts_use_exists(client, demo, django_capture_on_commit_callbacks):
    exercise(client, django_capture_on_commit_callbacks)
    names = exposed(client)
    used = {name for query in dashboard_queries() + alert_queries() for name in METRIC.findall(query)}
    # What issue 26 asks the files to show: dwell per state, illegal moves, ghost failures, decisions,
    # anomalies, request latency.
    assert {
        "arbiter_session_state_dwell_seconds_bucket",
        "arbiter_session_illegal_moves_total",
        "arbiter_ghost_failures_recent",
        "arbiter_decisions_total",
        "arbiter_anomalies_total",
        "arbiter_http_request_duration_seconds_bucket",
    } <= used
    assert used - names == set()

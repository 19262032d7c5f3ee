"""A point's ``store_raw_output``: off keeps the parsed candidate only, on keeps the raw output masked.
Through decide without and with a session (the hand-written log INSERT on PostgreSQL), and the
configuration's own ways: YAML import and export, revisions, the admin's form."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.sessions.models import Anomaly
from rules.config.records import point_save
from rules.config.selectors import config_document
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from rules.models import DecisionPoint, DecisionRecord
from tests.support import DEMO, agent_api, decide

pytestmark = pytest.mark.django_db

SWITCH = "    store_raw_output: true\n"
RAW = '{"decision": "general_query", "confidence": 0.9, "reason": "call 13812345678"}'
INVALID = "Sure! I think the answer is general_query"


def demo_text(*, store_raw: bool) -> str:
    text = DEMO.read_text(encoding="utf-8")
    assert SWITCH in text
    return text if store_raw else text.replace(SWITCH, "")


@pytest.fixture
def client_off(db) -> APIClient:
    config_import(text=demo_text(store_raw=False), source="t", actor=None, reason="raw output off")
    return agent_api("bot")


@pytest.fixture
def client_on(db) -> APIClient:
    config_import(text=demo_text(store_raw=True), source="t", actor=None, reason="raw output on")
    return agent_api("bot")


def _session(client: APIClient) -> str:
    made = client.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}, format="json")
    assert made.status_code == 201, made.content
    return "s1"


@pytest.mark.parametrize("with_session", [False, True])
def test_off_keeps_the_parsed_candidate_only(client_off, with_session):
    body = {"point": "intent_routing", "input": "有几种颜色", "candidate_raw": RAW}
    if with_session:
        body["session_id"] = _session(client_off)
    made = decide(client_off, body)
    assert made.status_code == 201, made.content
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert record.candidate_raw == ""
    assert (record.candidate_decision, record.candidate_confidence) == ("general_query", 0.9)
    assert record.candidate_reason == "call [phone]"
    assert client_off.get(f"/api/v1/decisions/{record.pk}").json()["candidate_raw"] is None


@pytest.mark.parametrize("with_session", [False, True])
def test_on_keeps_the_raw_output_masked(client_on, with_session):
    body = {"point": "intent_routing", "input": "有几种颜色", "candidate_raw": RAW}
    if with_session:
        body["session_id"] = _session(client_on)
    record = DecisionRecord.objects.get(pk=decide(client_on, body).json()["id"])
    assert record.candidate_raw == RAW.replace("13812345678", "[phone]")


def test_off_still_records_an_invalid_output_as_invalid_without_its_text(client_off):
    session = _session(client_off)
    made = decide(
        client_off, {"point": "intent_routing", "session_id": session, "input": "x", "candidate_raw": INVALID}
    )
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert record.candidate_invalid and record.candidate_raw == ""
    anomaly = Anomaly.objects.get(code="invalid_candidate_output")
    assert anomaly.raw == "" and anomaly.detail


def test_on_keeps_an_invalid_outputs_text_with_its_anomaly(client_on):
    session = _session(client_on)
    decide(client_on, {"point": "intent_routing", "session_id": session, "input": "x", "candidate_raw": INVALID})
    assert Anomaly.objects.get(code="invalid_candidate_output").raw == INVALID


def test_the_switch_is_exported_only_when_on_and_imports_back(client_on, actor):
    points = {p["key"]: p for p in config_document()["points"]}
    assert points["intent_routing"]["store_raw_output"] is True
    assert "store_raw_output" not in points["refund_approval"]
    assert "store_raw_output: true" in config_export()


def test_turning_it_off_is_a_revision_with_who_and_why(client_on, actor):
    point = DecisionPoint.objects.get(key="intent_routing")
    point.store_raw_output = False
    point_save(point=point, actor=actor, reason="no raw output in production")
    latest = point.history.order_by("-history_id").first()
    assert (latest.store_raw_output, latest.history_user, latest.history_change_reason) == (
        False,
        actor,
        "no raw output in production",
    )
    body = {"point": "intent_routing", "input": "有几种颜色", "candidate_raw": RAW}
    assert DecisionRecord.objects.get(pk=decide(client_on, body).json()["id"]).candidate_raw == ""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.conf import settings

from agents.sessions.models import Anomaly
from rules.config import records
from rules.models import CandidateRequestCount, DecisionRecord, Threshold
from tests.support import approved, decide, post

pytestmark = pytest.mark.django_db


def test_a_decision_is_answered_and_logged_with_candidate_versus_final(client):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "7f3a"}).status_code == 201
    r = decide(
        client,
        {
            "point": "intent_routing",
            "session_id": "7f3a",
            "input": "我要投诉",
            "candidate": {"decision": "general_query", "confidence": 0.82, "reason": "user asks a question"},
            "tokens": {"prompt": 218, "completion": 87},
        },
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["decision"] == "human_handoff"
    assert body["ruled_by"] == "hard_rule"
    assert body["rule"] == {"key": "high_risk_keyword", "priority": 10, "category": "compliance"}
    assert body["matched_rules"] == [
        {"key": "high_risk_keyword", "priority": 10, "outcome": "human_handoff", "shadow": False}
    ]
    assert body["candidate"] == {"decision": "general_query", "confidence": 0.82, "reason": "user asks a question"}
    assert body["overridden"] is True and body["needs_candidate"] is False
    assert body["reason"] == "high_risk_keyword: keyword 投诉 (list high_risk)"
    assert body["revision"] == 1
    record = DecisionRecord.objects.get(pk=body["id"])
    assert (record.session_id, record.candidate_decision, record.decision, record.tokens_prompt) == (
        "7f3a",
        "general_query",
        "human_handoff",
        218,
    )


def test_needs_candidate_is_counted_not_logged(client):
    r = decide(client, {"point": "intent_routing", "input": "你好"})
    assert r.status_code == 200
    assert r.json()["needs_candidate"] is True and r.json()["decision"] is None and r.json()["id"] is None
    assert not DecisionRecord.objects.exists()
    assert CandidateRequestCount.objects.get().count == 1


def test_personal_data_is_masked_in_the_log_and_the_record_says_what(client):
    text = "我的手机１３８００１３８０００，邮箱 a.b@example.com，我要退款"
    r = decide(client, {"point": "intent_routing", "input": text})
    record = DecisionRecord.objects.get(pk=r.json()["id"])
    assert "13800138000" not in record.input and "example.com" not in record.input
    assert record.input == "我的手机[phone],邮箱 [email],我要退款"
    assert record.masked == {"phone": 1, "email": 1}


def test_raw_model_output_is_parsed_from_prose_and_fences(client):
    raw = '好的，结果如下：\n```json\n{"intent": "product_info", "confidence": 0.9, "reason": "问颜色"}\n```'
    r = decide(client, {"point": "intent_routing", "input": "有几种颜色", "candidate_raw": raw})
    body = r.json()
    assert (body["decision"], body["ruled_by"]) == ("product_info", "llm_candidate")
    assert DecisionRecord.objects.get(pk=body["id"]).candidate_raw == raw


def test_unusable_raw_output_answers_the_default_and_records_an_anomaly(client):
    raw = "I think the user wants a refund, confidence high"
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    r = decide(client, {"point": "intent_routing", "session_id": "s1", "input": "有几种颜色", "candidate_raw": raw})
    body = r.json()
    assert r.status_code == 201
    assert (body["decision"], body["ruled_by"], body["candidate"]) == ("intent_clarify", "default", None)
    record = DecisionRecord.objects.get(pk=body["id"])
    assert record.candidate_raw == raw and record.candidate_invalid
    anomaly = Anomaly.objects.get()
    assert (anomaly.code, anomaly.session_id, anomaly.decision_id, anomaly.raw) == (
        "invalid_candidate_output",
        "s1",
        record.id,
        raw,
    )


def test_a_candidate_that_is_no_outcome_is_handled_by_the_whitelist_rule_and_recorded(client):
    r = decide(client, {"point": "intent_routing", "input": "hi", "candidate": {"decision": "dance", "confidence": 1}})
    assert r.status_code == 201
    assert (r.json()["decision"], r.json()["rule"]["key"]) == ("human_handoff", "candidate_not_whitelisted")
    assert Anomaly.objects.get().code == "candidate_not_an_outcome"


def test_idempotency_key_returns_the_same_answer_and_one_row(client):
    body = {"point": "refund_approval", "facts": {"refund_amount": 800}}
    first = decide(client, body, HTTP_IDEMPOTENCY_KEY="k-1")
    again = decide(client, body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert DecisionRecord.objects.count() == 1
    other = decide(client, {**body, "facts": {"refund_amount": 80}}, HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"


def test_decisions_are_readable_by_their_agent_only(client, other_client):
    r = decide(client, {"point": "refund_approval", "facts": {"refund_amount": 800}})
    decision_id = r.json()["id"]
    detail = client.get(f"/api/v1/decisions/{decision_id}")
    assert detail.status_code == 200
    assert detail.json()["facts"] == {"refund_amount": 800}
    assert detail.json()["matched_rules"][0]["key"] == "over_auto_refund_limit"
    hidden = other_client.get(f"/api/v1/decisions/{decision_id}")
    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"
    assert client.get("/api/v1/decisions/not-a-uuid").json()["code"] == "not_found"


def test_replay_is_identical_under_the_recorded_revision_and_shows_the_current_outcome(client, actor):
    r = decide(client, {"point": "refund_approval", "facts": {"refund_amount": 800}})
    decision_id = r.json()["id"]
    limit = Threshold.objects.get(key="auto_refund_limit")
    limit.value = Decimal("1000")
    approved(lambda: records.threshold_save(threshold=limit, actor=actor, reason="raise the automatic refund limit"))

    replay = client.get(f"/api/v1/decisions/{decision_id}/replay").json()
    assert replay["identical"] is True
    assert replay["revision"] == 1
    assert replay["replayed"]["decision"] == replay["recorded"]["decision"] == "human_handoff"
    assert replay["current"]["revision"] == 2
    assert (replay["current"]["decision"], replay["current"]["ruled_by"]) == ("auto_approve", "default")


def test_points_tell_the_agent_what_it_needs_to_build_its_prompt(client, other_client):
    listing = client.get("/api/v1/points").json()
    assert [p["key"] for p in listing["points"]] == ["intent_routing", "refund_approval"]
    point = client.get("/api/v1/points/intent_routing").json()
    assert point["candidate_whitelist"] == ["close_order", "general_query", "product_info"]
    assert point["min_confidence"] == 0.65 and point["min_confidence_threshold"] == "min_confidence"
    assert point["revision"] == 1
    assert client.get("/api/v1/points/refund_approval").json()["facts"] == {"refund_amount": "number"}
    assert [p["key"] for p in other_client.get("/api/v1/points").json()["points"]] == ["refund_approval"]


def _problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code and body["status"] == status
    return body


def test_every_error_is_problem_json_with_a_stable_code(client, other_client):
    from rest_framework.test import APIClient

    anonymous = APIClient()
    _problem(decide(anonymous, {"point": "intent_routing"}), 401, "not_authenticated")
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer arb_nope")
    _problem(decide(wrong, {"point": "intent_routing"}), 401, "not_authenticated")
    _problem(decide(other_client, {"point": "intent_routing"}), 403, "point_not_allowed")
    _problem(decide(client, {"point": "no_such_point"}), 404, "unknown_point")
    bad = client.post("/api/v1/decisions", data="{not json", content_type="application/json")
    _problem(bad, 400, "malformed_json")
    big = client.post(
        "/api/v1/decisions",
        data=json.dumps({"point": "intent_routing", "input": "x" * (settings.ARBITER_MAX_REQUEST_BYTES + 1)}),
        content_type="application/json",
    )
    _problem(big, 413, "payload_too_large")
    _problem(client.get("/api/v1/nothing-here"), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"point": "refund_approval", "facts": {"amount": 1}}, "facts"),
        ({"point": "refund_approval", "facts": {"refund_amount": "800"}}, "facts"),
        ({"point": "refund_approval", "facts": {"refund_amount": True}}, "facts"),
        ({"point": "intent_routing", "candidate": {"decision": "general_query", "confidence": 1.2}}, "confidence"),
        ({"point": "intent_routing", "candidate": {"decision": "general_query", "confidence": "0.9"}}, "confidence"),
        ({"point": "intent_routing", "candidate": {"confidence": 0.9}}, "decision"),
        ({"point": "intent_routing", "input": "x" * 10_001}, "input"),
        (
            {"point": "intent_routing", "candidate": {"decision": "a", "confidence": 0.5}, "candidate_raw": "{}"},
            "candidate_raw",
        ),
        ({"point": "intent_routing", "candidate": "general_query"}, "candidate"),
        ({"point": "intent_routing", "colour": "red"}, "colour"),
        ({"point": 7}, "point"),
        ({}, "point"),
    ],
)
def test_invalid_requests_get_422_with_the_field_named(client, body, field):
    body = _problem(decide(client, body), 422, "invalid_request")
    assert field in json.dumps(body["errors"])
    assert not DecisionRecord.objects.exists()


def test_nul_characters_are_refused_before_they_reach_the_database(client):
    from rules.config import records as rec
    from rules.models import DecisionPoint

    point = DecisionPoint.objects.get(key="refund_approval")
    point.facts = {**point.facts, "note": "string"}
    rec.point_save(point=point, actor=None, reason="add a text fact")
    for body in (
        {"point": "refund_approval", "facts": {"note": "a\x00b"}},
        {"point": "intent_routing", "input": "a\x00b"},
        {"point": "intent_routing", "candidate_raw": "\x00"},
    ):
        _problem(decide(client, body), 422, "invalid_request")
    assert not DecisionRecord.objects.exists()


@pytest.mark.parametrize("engine", ["native", "durable"])
def test_both_engine_backends_answer_the_api_alike(client, settings, engine):
    from rules.config.runtime import engines

    settings.ARBITER_ENGINE = engine
    engines.clear()
    r = decide(
        client,
        {"point": "intent_routing", "input": "我想退款", "candidate": {"decision": "general_query", "confidence": 0.9}},
    )
    body = r.json()
    assert (body["decision"], body["rule"]["key"], body["overridden"]) == ("refund_review", "refund_trigger", True)
    assert DecisionRecord.objects.get(pk=body["id"]).engine == engine


@pytest.mark.applies_config_at_once(reason="adds a rule and its condition one call at a time, then replays")
def test_replay_is_identical_for_rules_on_the_session_state(client, actor):
    from agents.sessions.services import session_create, session_transition
    from rules.config import records as rec
    from rules.models import Condition, DecisionPoint, Rule

    point = DecisionPoint.objects.get(key="intent_routing")
    rule = rec.rule_save(
        rule=Rule(point=point, key="in_review", priority=30, category="business", outcome="human_handoff"),
        actor=actor,
        reason="t",
    )
    rec.condition_save(
        condition=Condition(rule=rule, kind="session_state_in", states=["received"]), actor=actor, reason="t"
    )
    from agents.runtimes.models import AgentRuntime

    agent = AgentRuntime.objects.get(name="support_bot")
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    session_transition(agent=agent, session_id="s1", to="received", expected_state="init")
    body = decide(
        client,
        {
            "point": "intent_routing",
            "session_id": "s1",
            "input": "hello",
            "candidate": {"decision": "general_query", "confidence": 0.9},
        },
    ).json()
    assert (body["decision"], body["rule"]["key"]) == ("human_handoff", "in_review")
    replay = client.get(f"/api/v1/decisions/{body['id']}/replay").json()
    assert replay["identical"] is True and replay["replayed"]["rule"]["key"] == "in_review"


@pytest.mark.applies_config_at_once(reason="edits a keyword list step by step, then replays")
def test_replay_is_identical_when_a_keyword_would_match_a_masking_placeholder(client, actor):
    from rules.config import records as rec
    from rules.models import KeywordList

    rec.keyword_terms_add(
        keyword_list=KeywordList.objects.get(key="high_risk"), terms=["phone"], actor=actor, reason="t"
    )
    body = decide(
        client,
        {
            "point": "intent_routing",
            "input": "my number 13800001111",
            "candidate": {"decision": "general_query", "confidence": 0.9},
        },
    ).json()
    assert (body["decision"], body["ruled_by"]) == ("general_query", "llm_candidate")
    assert DecisionRecord.objects.get(pk=body["id"]).input == "my number [phone]"
    replay = client.get(f"/api/v1/decisions/{body['id']}/replay").json()
    assert replay["identical"] is True
    assert replay["current"]["decision"] == "general_query"

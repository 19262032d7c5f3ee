"""Session requests the fuzzing or the spec review found: each was a server error or a broken promise once."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support import move_of

pytestmark = pytest.mark.django_db


def post(client, path, body, **headers):
    raw = body if isinstance(body, str) else json.dumps(body)
    return client.post(path, data=raw, content_type="application/json", **headers)


def problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert (body["status"], body["code"]) == (status, code), body
    return body


def on(client, session_id, operation, body):
    """POST to one of a session's operations (``transitions``, ``actions``, ``interrupt``, …)."""
    return post(client, f"/api/v1/sessions/{session_id}/{operation}", body)


def create(client, session_id, machine="after_sales"):
    response = post(client, "/api/v1/sessions", {"machine": machine, "session_id": session_id})
    assert response.status_code == 201, response.content
    return response.json()


def test_a_transition_citing_an_unknown_decision_is_refused_not_a_server_error(agent_client):
    # It once failed the foreign key at commit: 500 on SQLite and PostgreSQL alike.
    create(agent_client, "s1")
    body = {"to": "received", "expected_state": "init", "decision_id": str(uuid.uuid4())}
    refused = problem(on(agent_client, "s1", "transitions", body), 422, "invalid_request")
    assert "decision_id" in refused["errors"]
    assert agent_client.get("/api/v1/sessions/s1").json()["seq"] == 0


def test_a_transition_may_cite_a_decision_about_this_session_only(agent_client):
    create(agent_client, "s1")
    create(agent_client, "s2")
    made = post(agent_client, "/api/v1/decisions", {"point": "refund_approval", "session_id": "s2"}).json()
    body = {"to": "received", "expected_state": "init", "decision_id": made["id"]}
    problem(on(agent_client, "s1", "transitions", body), 422, "invalid_request")
    moved = on(agent_client, "s2", "transitions", body)
    assert (moved.status_code, move_of(moved.json())) == (200, {"from": "init", "state": "received", "seq": 1})


def test_a_session_id_that_could_not_be_addressed_is_refused(agent_client):
    # Every other route has the id as one path segment: "a/b" was created, then never found again.
    refused = problem(
        post(agent_client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "a/b"}), 422, "invalid_request"
    )
    assert "session_id" in refused["errors"]


@pytest.mark.parametrize("context", [{"note": "a\x00b"}, {"a\x00": 1}, {"deep": [{"x": "\x00"}]}])
def test_a_context_holding_nul_is_refused(agent_client, context):
    # PostgreSQL cannot store NUL in JSON: this was a 500 there (and stored as sent on SQLite).
    body = {"machine": "after_sales", "session_id": "s1", "context": context}
    problem(post(agent_client, "/api/v1/sessions", body), 422, "invalid_request")


def test_decide_and_move_reports_where_the_session_came_from_when_an_anomaly_hands_it_off(agent_client):
    create(agent_client, "s1")
    for _ in range(2):
        problem(on(agent_client, "s1", "actions", {"type": "refund"}), 422, "action_not_allowed")
    # Raw output with no candidate: the third anomaly, which hands the session off before the mapping.
    body = {"point": "intent_routing", "session_id": "s1", "candidate_raw": "sorry, no idea", "apply": True}
    made = post(agent_client, "/api/v1/decisions", body).json()
    assert move_of(made["session"]) == {"from": "init", "state": "human_handoff", "seq": 1}, made
    detail = agent_client.get("/api/v1/sessions/s1").json()
    assert (detail["state"], detail["handoff_reason"]) == ("human_handoff", "model_failure")


def test_a_session_the_policy_handed_off_is_not_taken_back_out_by_resume_or_interrupt(agent_client):
    create(agent_client, "s1")
    assert on(agent_client, "s1", "interrupt", {"to": "received", "expected_state": "init"}).status_code == 200
    for _ in range(3):
        on(agent_client, "s1", "anomalies", {"code": "invalid_json"})
    detail = agent_client.get("/api/v1/sessions/s1").json()
    assert (detail["state"], detail["interrupt_stack"]) == ("human_handoff", ["init"])
    resume = problem(on(agent_client, "s1", "resume", {"expected_state": "human_handoff"}), 409, "session_handed_off")
    assert (resume["state"], resume["seq"], resume["handoff_reason"]) == ("human_handoff", 2, "model_failure")
    interrupt = {"to": "received", "expected_state": "human_handoff"}
    problem(on(agent_client, "s1", "interrupt", interrupt), 409, "session_handed_off")
    move = {"to": "closed", "expected_state": "human_handoff"}
    problem(on(agent_client, "s1", "transitions", move), 409, "session_handed_off")


def test_refusals_about_the_state_carry_it(agent_client):
    create(agent_client, "c1", machine="change_address")
    stale = problem(
        on(agent_client, "c1", "transitions", {"to": "awaiting_intent", "expected_state": "executing"}),
        409,
        "state_mismatch",
    )
    assert (stale["state"], stale["seq"]) == ("created", 0)
    action = problem(on(agent_client, "c1", "actions", {"type": "change_address"}), 422, "action_not_allowed")
    assert (action["state"], action["seq"], action["allowed_actions"], action["handed_off"]) == (
        "created",
        0,
        [],
        False,
    )
    illegal = problem(
        on(agent_client, "c1", "transitions", {"to": "executing", "expected_state": "created"}),
        422,
        "illegal_transition",
    )
    assert (illegal["allowed_transitions"], illegal["handed_off"]) == (["awaiting_intent"], False)
    empty = problem(on(agent_client, "c1", "resume", {"expected_state": "created"}), 409, "nothing_to_resume")
    assert (empty["state"], empty["seq"]) == ("created", 0)


def test_another_agents_session_is_unknown(agent_client, client):
    from agents.runtimes.services import agent_create

    create(agent_client, "s1")
    _, other = agent_create(name="other_bot", point_keys=["intent_routing"], actor=None, reason="t")
    response = client.get("/api/v1/sessions/s1", HTTP_AUTHORIZATION=f"Bearer {other}")
    problem(response, 404, "unknown_session")


def test_a_decision_id_is_text_not_a_number(agent_client):
    create(agent_client, "s1")
    made = post(agent_client, "/api/v1/decisions", {"point": "refund_approval", "session_id": "s1"}).json()
    body = {"to": "received", "expected_state": "init", "decision_id": uuid.UUID(made["id"]).int}
    problem(on(agent_client, "s1", "transitions", body), 422, "invalid_request")


@pytest.mark.parametrize("operation", ["", "/transitions", "/actions", "/interrupt", "/resume", "/anomalies"])
def test_a_session_id_holding_nul_is_an_unknown_session_not_a_server_error(agent_client, operation):
    # PostgreSQL cannot compare text holding NUL: looking the session up was a 500 there.
    path = f"/api/v1/sessions/a%00b{operation}"
    response = agent_client.get(path) if not operation else post(agent_client, path, {})
    problem(response, 404, "unknown_session")

"""Machine events and guards through the HTTP layer: POST /sessions/<id>/events, and the edge guards on
POST /transitions. The machine is this test's own: seed 003's address change, with its business-failure
event ``clarification_required`` (executing → back to collecting_params)."""

from __future__ import annotations

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from rules.config.yaml_import import config_import
from tests.support import agent_api, post

pytestmark = pytest.mark.django_db

DOCUMENT = """
version: 1
thresholds: []
keyword_lists: []
points:
  - key: params_check
    outcomes: [complete, incomplete]
    candidate_whitelist: [complete, incomplete]
    default_outcome: complete
    when_no_candidate: default
machines:
  - key: address_events
    states: [awaiting_intent, collecting_params, executing, completed, failed, human_handoff]
    initial: awaiting_intent
    handoff: human_handoff
    terminal: [completed, failed]
    transitions:
      awaiting_intent: [collecting_params, human_handoff]
      collecting_params: [executing, failed, human_handoff]
      executing: [completed, collecting_params, failed, human_handoff]
      human_handoff: [completed, failed]
    fields:
      - name: receiver_phone
        type: string
    events:
      - name: intent_identified
        from: [awaiting_intent]
        to: collecting_params
      - name: params_collected
        from: [collecting_params]
        to: executing
        guard:
          requires_decision: {point: params_check, outcomes: [complete]}
      - name: clarification_required
        from: [executing]
        to: collecting_params
      - name: action_success
        from: [executing]
        to: completed
    guards:
      executing:
        completed:
          requires_fields: [receiver_phone]
"""


@pytest.fixture
def client():
    config_import(text=DOCUMENT, source="test", actor=None, reason="events test")
    return agent_api(points=["params_check"])


def start(client, key="s1"):
    assert post(client, "/api/v1/sessions", {"machine": "address_events", "session_id": key}).status_code == 201


def send(client, event, expected, key="s1", **body):
    headers = {"HTTP_IDEMPOTENCY_KEY": body.pop("idempotency_key")} if "idempotency_key" in body else {}
    return post(
        client, f"/api/v1/sessions/{key}/events", {"event": event, "expected_state": expected, **body}, **headers
    )


def decide(client, key="s1", outcome=None):
    body = {"point": "params_check", "session_id": key, "input": "my phone is 13800138000"}
    if outcome:
        body["candidate"] = {"decision": outcome, "confidence": 0.9, "reason": "the model says so"}
    answer = post(client, "/api/v1/decisions", body)
    assert answer.status_code == 201, answer.json()
    return answer.json()["id"]


def to_executing(client, key="s1"):
    start(client, key)
    assert send(client, "intent_identified", "awaiting_intent", key).status_code == 200
    answer = send(client, "params_collected", "collecting_params", key, decision_id=decide(client, key))
    assert answer.status_code == 200, answer.json()


def test_an_allowed_event_moves_and_answers_with_the_session(client):
    start(client)
    answer = send(client, "intent_identified", "awaiting_intent")
    assert answer.status_code == 200
    body = answer.json()
    assert {k: body[k] for k in ("event", "from", "to", "seq")} == {
        "event": "intent_identified",
        "from": "awaiting_intent",
        "to": "collecting_params",
        "seq": 1,
    }
    assert body["session"]["state"] == "collecting_params"
    row = Transition.objects.get(session__key="s1", seq=1)
    assert (row.from_state, row.to_state, row.reason) == (
        "awaiting_intent",
        "collecting_params",
        "event intent_identified",
    )


@pytest.mark.parametrize("event", ["action_success", "fly_away"])
def test_an_event_not_allowed_here_is_refused_with_the_allowed_events_and_an_anomaly(client, event):
    start(client)
    answer = send(client, event, "awaiting_intent")
    assert (answer.status_code, answer["Content-Type"]) == (422, "application/problem+json")
    body = answer.json()
    assert body["code"] == "event_not_allowed"
    assert body["allowed_events"] == ["intent_identified"]
    assert body["session"]["state"] == "awaiting_intent"
    assert list(Anomaly.objects.filter(session_id="s1").values_list("code", flat=True)) == ["event_not_allowed"]
    assert Session.objects.get(key="s1").seq == 0


def test_a_stale_caller_gets_state_mismatch_with_the_session(client):
    start(client)
    answer = send(client, "params_collected", "collecting_params")
    assert (answer.status_code, answer.json()["code"]) == (409, "state_mismatch")
    assert answer.json()["session"]["state"] == "awaiting_intent"


def test_seed_003_a_business_failure_goes_back_to_collecting(client):
    to_executing(client)
    answer = send(client, "clarification_required", "executing")
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["to"], answer.json()["session"]["state"]) == ("collecting_params", "collecting_params")


def test_requires_decision_is_satisfied_by_a_decision_of_this_session_here(client):
    start(client)
    send(client, "intent_identified", "awaiting_intent")
    answer = send(client, "params_collected", "collecting_params", decision_id=decide(client))
    assert answer.status_code == 200, answer.json()
    assert Transition.objects.get(session__key="s1", seq=2).decision_id is not None


def guard_refusal(answer, guard):
    assert (answer.status_code, answer.json()["code"]) == (422, "guard_failed"), answer.json()
    assert answer.json()["guard"] == guard
    return answer.json()


def test_requires_decision_refuses_no_decision_and_the_wrong_outcome(client):
    start(client)
    send(client, "intent_identified", "awaiting_intent")
    body = guard_refusal(send(client, "params_collected", "collecting_params"), "requires_decision")
    assert "cite a decision of params_check (complete)" in body["reason"]
    body = guard_refusal(
        send(client, "params_collected", "collecting_params", decision_id=decide(client, outcome="incomplete")),
        "requires_decision",
    )
    assert "the decision cited is incomplete" in body["reason"]
    assert body["session"]["state"] == "collecting_params"
    # Not marked as the model's proposal: refused, but no anomaly.
    assert not Anomaly.objects.filter(session_id="s1").exists()


def test_a_guard_refusing_the_models_proposal_is_an_anomaly(client):
    start(client)
    send(client, "intent_identified", "awaiting_intent")
    guard_refusal(send(client, "params_collected", "collecting_params", proposed_by="model"), "requires_decision")
    assert list(Anomaly.objects.filter(session_id="s1").values_list("code", flat=True)) == ["guard_failed"]


def test_requires_decision_refuses_another_sessions_decision(client):
    start(client, "other")
    send(client, "intent_identified", "awaiting_intent", "other")
    theirs = decide(client, "other")
    start(client)
    send(client, "intent_identified", "awaiting_intent")
    answer = send(client, "params_collected", "collecting_params", decision_id=theirs)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request")
    # A decision about no session passes the citation check, not the guard.
    unbound = post(client, "/api/v1/decisions", {"point": "params_check", "input": "x"}).json()["id"]
    body = guard_refusal(
        send(client, "params_collected", "collecting_params", decision_id=unbound), "requires_decision"
    )
    assert "not one of this session's" in body["reason"]


def test_requires_decision_refuses_a_decision_from_another_state(client):
    start(client)
    early = decide(client)  # made in awaiting_intent
    send(client, "intent_identified", "awaiting_intent")
    body = guard_refusal(send(client, "params_collected", "collecting_params", decision_id=early), "requires_decision")
    assert "made in another state ('awaiting_intent')" in body["reason"]


def test_a_decision_made_before_the_session_last_entered_its_state_does_not_count(client):
    start(client)
    send(client, "intent_identified", "awaiting_intent")
    before = decide(client)
    assert send(client, "params_collected", "collecting_params", decision_id=before).status_code == 200
    assert send(client, "clarification_required", "executing").status_code == 200
    # Back in collecting_params: the decision made on the first visit is not about this one.
    body = guard_refusal(send(client, "params_collected", "collecting_params", decision_id=before), "requires_decision")
    assert "made in another state" in body["reason"]


def test_an_edge_guard_holds_plain_transitions_and_events(client):
    to_executing(client)
    move = {"to": "completed", "expected_state": "executing"}
    body = guard_refusal(post(client, "/api/v1/sessions/s1/transitions", move), "requires_fields")
    assert body["reason"] == "missing receiver_phone"
    guard_refusal(send(client, "action_success", "executing"), "requires_fields")
    assert not Anomaly.objects.filter(session_id="s1").exists()
    guard_refusal(post(client, "/api/v1/sessions/s1/transitions", {**move, "proposed_by": "model"}), "requires_fields")
    assert list(Anomaly.objects.filter(session_id="s1").values_list("code", flat=True)) == ["guard_failed"]
    # The guard reads the session's stored fields as the move would leave them: with the field set in the
    # same move (updates), the move goes through.
    answer = post(client, "/api/v1/sessions/s1/transitions", {**move, "updates": {"receiver_phone": "13800138000"}})
    assert (answer.status_code, answer.json()["state"]) == (200, "completed"), answer.json()


def test_an_event_is_replayed_under_its_idempotency_key(client):
    start(client)
    first = send(client, "intent_identified", "awaiting_intent", idempotency_key="e1")
    again = send(client, "intent_identified", "awaiting_intent", idempotency_key="e1")
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json()
    assert Session.objects.get(key="s1").seq == 1
    other = send(client, "clarification_required", "collecting_params", idempotency_key="e1")
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_conflict")

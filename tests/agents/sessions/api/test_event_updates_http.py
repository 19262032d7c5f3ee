"""An event with field ``updates`` through HTTP: checked as a PATCH's and a transition's are, written
with the event's move or not at all, seen by the guards and the target's required fields, replayed
under its Idempotency-Key; and ``allowed_events`` on the session object. The machine is this test's own
(seed 003's change of address)."""

from __future__ import annotations

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from rules.config.yaml_import import config_import
from tests.support import agent_api, post

pytestmark = pytest.mark.django_db

DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points:
  - key: params_check
    outcomes: [complete, incomplete]
    default_outcome: complete
    when_no_candidate: default
machines:
  - key: address_updates
    states: [awaiting_intent, collecting_params, executing, completed, failed, human_handoff]
    initial: awaiting_intent
    handoff: human_handoff
    terminal: [completed, failed]
    max_anomalies: 5
    transitions:
      awaiting_intent: [collecting_params, human_handoff]
      collecting_params: [executing, failed, human_handoff]
      executing: [completed, collecting_params, failed, human_handoff]
      human_handoff: [completed, failed]
    fields:
      - name: receiver_phone
        type: string
        pattern: '^1[3-9]\d{9}$'
        normalize: [digits]
        required_in: [executing]
        pii: true
      - name: new_address
        type: string
        min_length: 2
      - name: failure
        type: string
    events:
      - name: intent_identified
        from: [awaiting_intent]
        to: collecting_params
      - name: params_collected
        from: [collecting_params]
        to: executing
        guard:
          requires_fields: [new_address]
      - name: clarification_required
        from: [executing]
        to: collecting_params
      - name: action_success
        from: [executing]
        to: completed
"""

COLLECTING = ["params_collected"]


@pytest.fixture
def client():
    config_import(text=DOCUMENT, source="test", actor=None, reason="event updates test")
    return agent_api(points=["params_check"])


def start(client, key="s1"):
    answer = post(client, "/api/v1/sessions", {"machine": "address_updates", "session_id": key})
    assert answer.status_code == 201, answer.json()
    assert answer.json()["session"]["allowed_events"] == ["intent_identified"]
    answer = send(client, "intent_identified", "awaiting_intent", key)
    assert answer.status_code == 200, answer.json()
    return answer.json()


def send(client, event, expected, key="s1", **body):
    headers = {"HTTP_IDEMPOTENCY_KEY": body.pop("idempotency_key")} if "idempotency_key" in body else {}
    return post(
        client, f"/api/v1/sessions/{key}/events", {"event": event, "expected_state": expected, **body}, **headers
    )


def stored(key="s1"):
    return Session.objects.get(key=key)


def test_an_events_updates_are_written_with_its_move(client):
    start(client)
    updates = {"receiver_phone": "138-0013-8000", "new_address": "杭州市西湖区"}
    answer = send(client, "params_collected", "collecting_params", updates=updates)
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["to"], body["seq"], body["normalised"]) == ("executing", 2, {"receiver_phone": ["digits"]})
    assert body["session"]["fields"] == {"receiver_phone": "13800138000", "new_address": "杭州市西湖区"}
    assert body["session"]["allowed_events"] == ["clarification_required", "action_success"]
    session = stored()
    assert (session.state, session.seq) == ("executing", 2)
    assert session.field_values == {"receiver_phone": "13800138000", "new_address": "杭州市西湖区"}
    # One move, its row naming the fields it changed, the personal one masked.
    row = Transition.objects.get(session=session, seq=2)
    assert (row.kind, row.reason) == ("move", "event params_collected")
    assert row.fields_changed == {"receiver_phone": "[masked]", "new_address": "杭州市西湖区"}


def test_a_refused_value_refuses_the_event_and_writes_nothing(client):
    start(client)
    updates = {"receiver_phone": "abc", "new_address": "杭州市西湖区"}
    answer = send(client, "params_collected", "collecting_params", updates=updates)
    assert (answer.status_code, answer["Content-Type"]) == (422, "application/problem+json")
    body = answer.json()
    assert body["code"] == "invalid_fields" and list(body["errors"]) == ["receiver_phone"]
    assert body["session"]["state"] == "collecting_params" and body["session"]["fields"] == {}
    session = stored()
    assert (session.state, session.seq, session.field_values) == ("collecting_params", 1, {})
    (anomaly,) = Anomaly.objects.filter(session_id="s1")
    assert anomaly.code == "field_invalid" and "abc" not in anomaly.detail  # pii: the value is never shown
    assert session.anomaly_count == 1


def test_the_targets_required_fields_see_the_updates(client):
    start(client)
    # The phone is required in executing: missing without it, the address (the guard's) alone is not enough.
    answer = send(client, "params_collected", "collecting_params", updates={"new_address": "杭州市西湖区"})
    assert (answer.status_code, answer.json()["code"]) == (422, "fields_missing")
    assert answer.json()["missing"] == ["receiver_phone"]
    assert stored().field_values == {}  # the address was not written either


def test_the_events_guard_sees_the_updates_and_a_refusal_writes_nothing(client):
    start(client)
    answer = send(client, "params_collected", "collecting_params", updates={"receiver_phone": "13800138000"})
    assert (answer.status_code, answer.json()["code"]) == (422, "guard_failed"), answer.json()
    assert (answer.json()["guard"], answer.json()["reason"]) == ("requires_fields", "missing new_address")
    session = stored()
    assert (session.state, session.seq, session.field_values) == ("collecting_params", 1, {})
    # Clearing a field the guard needs in the same event refuses it too, whatever was stored before.
    patched = client.patch(
        "/api/v1/sessions/s1/fields",
        {"expected_state": "collecting_params", "updates": {"new_address": "杭州市西湖区"}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    answer = send(
        client,
        "params_collected",
        "collecting_params",
        updates={"receiver_phone": "13800138000", "new_address": None},
    )
    assert (answer.status_code, answer.json()["reason"]) == (422, "missing new_address")
    assert stored().field_values == {"new_address": "杭州市西湖区"}


def test_an_event_not_allowed_writes_none_of_its_updates(client):
    start(client)
    answer = send(client, "action_success", "collecting_params", updates={"new_address": "杭州市西湖区"})
    assert (answer.status_code, answer.json()["code"]) == (422, "event_not_allowed")
    assert answer.json()["session"]["allowed_events"] == COLLECTING
    assert stored().field_values == {}


def test_seed_003_back_to_collecting_with_what_went_wrong(client):
    start(client)
    updates = {"receiver_phone": "13800138000", "new_address": "火星市"}
    assert send(client, "params_collected", "collecting_params", updates=updates).status_code == 200
    # The address book does not know 火星市: the business call failed. Back to asking, with why.
    answer = send(
        client,
        "clarification_required",
        "executing",
        updates={"new_address": None, "failure": "address not found"},
    )
    assert answer.status_code == 200, answer.json()
    session = answer.json()["session"]
    assert (session["state"], session["allowed_events"]) == ("collecting_params", COLLECTING)
    assert session["fields"] == {"receiver_phone": "13800138000", "failure": "address not found"}
    assert Transition.objects.get(session__key="s1", seq=3).fields_changed == {
        "new_address": None,
        "failure": "address not found",
    }


def test_an_event_with_updates_is_replayed_under_its_key_and_the_updates_are_part_of_it(client):
    start(client)
    updates = {"receiver_phone": "138 0013 8000", "new_address": "杭州市西湖区"}
    first = send(client, "params_collected", "collecting_params", updates=updates, idempotency_key="e1")
    again = send(client, "params_collected", "collecting_params", updates=updates, idempotency_key="e1")
    assert (first.status_code, again.status_code) == (200, 200), first.json()
    assert again.json() == first.json() and first.json()["normalised"] == {"receiver_phone": ["digits"]}
    assert stored().seq == 2
    other = {**updates, "new_address": "北京市朝阳区"}
    answer = send(client, "params_collected", "collecting_params", updates=other, idempotency_key="e1")
    assert (answer.status_code, answer.json()["code"]) == (409, "idempotency_conflict")
    assert stored().field_values["new_address"] == "杭州市西湖区"


def test_allowed_events_is_on_every_session_answer_and_empty_once_ended(client):
    start(client)
    detail = client.get("/api/v1/sessions/s1").json()
    assert detail["session"]["allowed_events"] == COLLECTING
    updates = {"receiver_phone": "13800138000", "new_address": "杭州市西湖区"}
    send(client, "params_collected", "collecting_params", updates=updates)
    done = send(client, "action_success", "executing")
    assert done.status_code == 200 and "normalised" not in done.json()  # only an event with updates has it
    assert done.json()["session"]["allowed_events"] == []  # completed is terminal
    # A refusal carries the session object too.
    refused = send(client, "action_success", "completed")
    assert refused.json()["code"] == "session_closed" and refused.json()["session"]["allowed_events"] == []


def test_a_decide_answers_with_the_allowed_events_too(client):
    """The decide path reads the session its own way (on PostgreSQL, once it knows the session's state,
    in the statement that logs the decision): the machine's events come with that read."""
    start(client)
    for _ in range(2):  # the first may read the session, the second guesses its state
        answer = post(client, "/api/v1/decisions", {"point": "params_check", "session_id": "s1", "input": "x"})
        assert answer.status_code == 201, answer.json()
        assert answer.json()["session"]["allowed_events"] == COLLECTING

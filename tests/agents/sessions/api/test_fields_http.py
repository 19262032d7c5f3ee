"""A session's fields through HTTP: PATCH …/fields, updates with a move, required fields on every agent's
way into a state, masking, idempotency. The machine is this test's own (seed 003's change of address:
``receiver_phone``, a pattern, normalised to digits, required to enter ``executing``, personal data)."""

from __future__ import annotations

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from rules.config.machines import machine_save
from rules.models import StateMachine
from tests.support import agent_api, make_user, post

PHONE = {
    "name": "receiver_phone",
    "type": "string",
    "pattern": r"^1[3-9]\d{9}$",
    "normalize": ["digits"],
    "required_in": ["executing"],
    "pii": True,
}
ADDRESS = {"name": "new_address", "type": "string", "min_length": 2}
MACHINE = {
    "states": ["collecting_params", "executing", "clarify", "handoff", "completed"],
    "initial_state": "collecting_params",
    "handoff_state": "handoff",
    "terminal_states": ["completed"],
    "transitions": {
        "collecting_params": ["executing", "clarify", "handoff"],
        "clarify": ["collecting_params", "executing", "handoff"],
        "executing": ["completed", "handoff"],
        "handoff": ["collecting_params"],
    },
    "max_anomalies": 3,
}


@pytest.fixture
def client(db):
    actor = make_user("fields_author")
    machine_save(
        machine=StateMachine(key="address_fields", **MACHINE, fields=[PHONE, ADDRESS]), actor=actor, reason="test"
    )
    return agent_api(points=[])


def start(client, key="s1"):
    answer = post(client, "/api/v1/sessions", {"machine": "address_fields", "session_id": key})
    assert answer.status_code == 201, answer.json()
    return answer.json()


def patch(client, key, body, **headers):
    return client.patch(f"/api/v1/sessions/{key}/fields", body, format="json", **headers)


def test_a_patch_stores_the_normalised_value_and_says_so(client):
    start(client)
    answer = patch(
        client, "s1", {"expected_state": "collecting_params", "updates": {"receiver_phone": "138-0013-8000"}}
    )
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["fields"] == {"receiver_phone": "13800138000"}
    assert body["normalised"] == {"receiver_phone": ["digits"]}
    assert body["session"]["seq"] == 1 and body["session"]["state"] == "collecting_params"
    assert body["session"]["missing"] == {}
    assert Session.objects.get(key="s1").field_values == {"receiver_phone": "13800138000"}
    # The move's row names the field, its value masked: personal data never reaches the timeline.
    (row,) = Transition.objects.filter(session__key="s1")
    assert row.kind == "fields" and row.fields_changed == {"receiver_phone": "[masked]"}


@pytest.mark.parametrize("value", ["abc", 13800138000])
def test_a_value_not_of_the_field_is_refused_and_counted(client, value):
    start(client)
    answer = patch(
        client,
        "s1",
        {"expected_state": "collecting_params", "updates": {"receiver_phone": value, "new_address": "杭州市"}},
    )
    assert answer.status_code == 422, answer.json()
    body = answer.json()
    assert body["code"] == "invalid_fields"
    assert list(body["errors"]) == ["receiver_phone"]
    assert body["session"]["fields"] == {}  # all or nothing: the good address was not stored either
    (anomaly,) = Anomaly.objects.filter(session_id="s1")
    assert anomaly.code == "field_invalid" and "138" not in anomaly.detail and "abc" not in anomaly.detail
    assert Session.objects.get(key="s1").anomaly_count == 1


def test_an_unknown_field_is_refused_by_name(client):
    start(client)
    answer = patch(client, "s1", {"expected_state": "collecting_params", "updates": {"phone": "13800138000"}})
    assert answer.status_code == 422
    assert answer.json()["errors"] == {"phone": ["address_fields declares no field 'phone'."]}


def test_entering_a_state_without_its_required_fields_is_refused_and_nothing_is_written(client):
    start(client)
    answer = post(client, "/api/v1/sessions/s1/transitions", {"to": "executing", "expected_state": "collecting_params"})
    assert answer.status_code == 422, answer.json()
    body = answer.json()
    assert body["code"] == "fields_missing" and body["missing"] == ["receiver_phone"]
    assert body["session"]["state"] == "collecting_params" and body["session"]["seq"] == 0
    assert body["session"]["missing"] == {"executing": ["receiver_phone"]}
    assert not Transition.objects.exists()


def test_a_move_with_its_updates_is_made_with_them(client):
    start(client)
    answer = post(
        client,
        "/api/v1/sessions/s1/transitions",
        {"to": "executing", "expected_state": "collecting_params", "updates": {"receiver_phone": "138 0013 8000"}},
    )
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["state"] == "executing" and body["normalised"] == {"receiver_phone": ["digits"]}
    assert body["session"]["fields"] == {"receiver_phone": "13800138000"}
    (row,) = Transition.objects.all()
    assert row.fields_changed == {"receiver_phone": "[masked]"}


def test_a_move_with_a_bad_update_is_not_made(client):
    start(client)
    answer = post(
        client,
        "/api/v1/sessions/s1/transitions",
        {"to": "executing", "expected_state": "collecting_params", "updates": {"receiver_phone": "12345"}},
    )
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_fields"
    assert Session.objects.get(key="s1").state == "collecting_params"


def test_a_stale_patch_is_refused_with_the_session(client):
    start(client)
    answer = patch(client, "s1", {"expected_state": "executing", "updates": {"new_address": "杭州市西湖区"}})
    assert answer.status_code == 409 and answer.json()["code"] == "state_mismatch"
    assert answer.json()["session"]["state"] == "collecting_params"


def test_null_clears_a_field_but_not_one_the_current_state_requires(client):
    start(client)
    post(
        client,
        "/api/v1/sessions/s1/transitions",
        {
            "to": "executing",
            "expected_state": "collecting_params",
            "updates": {"receiver_phone": "13800138000", "new_address": "杭州"},
        },
    )
    cleared = patch(client, "s1", {"expected_state": "executing", "updates": {"new_address": None}})
    assert cleared.status_code == 200 and cleared.json()["fields"] == {"receiver_phone": "13800138000"}
    refused = patch(client, "s1", {"expected_state": "executing", "updates": {"receiver_phone": None}})
    assert refused.status_code == 422 and refused.json()["code"] == "fields_missing"


def test_an_interrupt_into_a_state_needing_fields_is_refused(client):
    start(client)
    answer = post(client, "/api/v1/sessions/s1/interrupt", {"to": "executing", "expected_state": "collecting_params"})
    assert answer.status_code == 422 and answer.json()["code"] == "fields_missing"


def test_the_session_read_shows_fields_and_what_is_missing(client):
    start(client)
    patch(client, "s1", {"expected_state": "collecting_params", "updates": {"new_address": "杭州市西湖区"}})
    body = client.get("/api/v1/sessions/s1").json()
    assert body["fields"] == {"new_address": "杭州市西湖区"}
    assert body["missing"] == {"executing": ["receiver_phone"]}
    assert body["session"]["missing"] == {"executing": ["receiver_phone"]}


def test_a_patch_retried_with_its_key_replays(client):
    start(client)
    body = {"expected_state": "collecting_params", "updates": {"receiver_phone": "138-0013-8000"}}
    first = patch(client, "s1", body, HTTP_IDEMPOTENCY_KEY="k1")
    again = patch(client, "s1", body, HTTP_IDEMPOTENCY_KEY="k1")
    assert again.status_code == 200 and again.json() == first.json()
    assert Transition.objects.count() == 1
    other = patch(client, "s1", {**body, "updates": {"new_address": "杭州"}}, HTTP_IDEMPOTENCY_KEY="k1")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"


def test_a_patch_changing_nothing_writes_nothing(client):
    start(client)
    body = {"expected_state": "collecting_params", "updates": {"receiver_phone": "13800138000"}}
    patch(client, "s1", body)
    again = patch(client, "s1", body)
    assert again.status_code == 200 and again.json()["session"]["seq"] == 1
    assert Transition.objects.count() == 1

"""``POST /api/v1/sessions/<id>/tool-calls`` over HTTP (DRF's test client): every refusal in the check's
order, the operation id's repeats and conflicts, and the state-level retry lease."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from agents.sessions.models import Anomaly, Session
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from rules.config.yaml_import import config_import
from tests.support import agent_api, approved
from tests.support.http import PROBLEM
from tests.support.tool_calls import PHONE, TOOLS_DOCUMENT, check, check_when_due, move, report

pytestmark = pytest.mark.django_db


def problem(answer, status: int, code: str) -> dict:
    assert (answer.status_code, answer["Content-Type"]) == (status, PROBLEM), answer.content
    body = answer.json()
    assert body["code"] == code, body
    assert body["session"]["session_id"], body  # every refusal carries the session object
    return body


def anomalies(code: str) -> int:
    return Anomaly.objects.filter(code=code).count()


def test_an_allowed_call_starts_its_first_attempt(client, session):
    answer = check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["operation_id"] == "op-1" and body["attempt"] == 1 and body["timeout_ms"] == 10_000
    assert body["session"]["state"] == "start"
    deadline = dt.datetime.fromisoformat(body["deadline"].replace("Z", "+00:00"))
    assert dt.timedelta(seconds=9) < deadline - timezone.now() <= dt.timedelta(seconds=10)
    call = ToolCall.objects.get(operation_id="op-1")
    assert (call.status, call.attempt, call.state, call.risk) == ("running", 1, "start", "read_only")
    assert call.input == {"phone": "[phone]"}  # masked like facts; the digest tells repeats apart
    attempt = ToolAttempt.objects.get(call=call)
    assert (attempt.attempt, attempt.breaker_state, attempt.finished_at) == (1, "closed", None)


def test_the_server_names_an_operation_when_the_agent_does_not(client, session):
    body = check(client, session, "flaky", {}).json()
    assert ToolCall.objects.get().operation_id == body["operation_id"] and len(body["operation_id"]) == 36


def test_unknown_session_and_another_agents_session(client, session):
    assert check(client, "nope", "flaky", {}).json()["code"] == "unknown_session"
    other = agent_api("other_bot", points=[])
    answer = check(other, session, "flaky", {})
    assert (answer.status_code, answer.json()["code"]) == (404, "unknown_session")


def test_a_handed_off_session_refuses_the_call_as_an_anomaly(client, session):
    move(client, session, "human_handoff", "start")
    body = problem(check(client, session, "flaky", {}, expected="human_handoff"), 409, "session_handed_off")
    assert anomalies("session_handed_off") == 1 and body["session"]["handed_off"] is True
    assert not ToolCall.objects.exists()


def test_state_mismatch(client, session):
    body = problem(check(client, session, "flaky", {}, expected="checking"), 409, "state_mismatch")
    assert body["state"] == "start" and not ToolCall.objects.exists()


def test_an_ended_session_refuses(client, session):
    move(client, session, "done", "start")
    problem(check(client, session, "flaky", {}, expected="done"), 409, "session_closed")


def test_a_tool_outside_the_states_whitelist_is_refused_as_an_anomaly(client, session):
    move(client, session, "checking", "start")
    body = problem(check(client, session, "flaky", {}, expected="checking"), 422, "tool_not_allowed")
    assert body["allowed_actions"] == ["verify_phone", "slow_retry"] and body["handed_off"] is False
    assert anomalies("tool_not_allowed") == 1 and not ToolCall.objects.exists()


def test_a_whitelisted_tool_without_a_contract_is_unknown(client, session):
    problem(check(client, session, "no_contract", {}), 422, "unknown_tool")
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize(
    ("input", "errors"),
    [
        ({"phone": "abc"}, {"/phone": ['"abc" does not match "^1[3-9][0-9]{9}$"']}),
        # Seed 000: the model sent the number as a number.
        ({"phone": 13800138000}, {"/phone": ['13800138000 is not of type "string"']}),
        # "" is the JSON pointer of the input as a whole (RFC 6901).
        ({}, {"": ['"phone" is a required property']}),
        ({"phone": PHONE, "extra": 1}, {"": ["Additional properties are not allowed ('extra' was unexpected)"]}),
    ],
)
def test_an_input_its_schema_refuses_is_refused_per_json_pointer(client, session, input, errors):
    body = problem(check(client, session, "verify_phone", input), 422, "invalid_tool_input")
    assert body["errors"] == errors
    assert anomalies("invalid_tool_input") == 1 and not ToolCall.objects.exists()
    # The anomaly keeps what the messages quote masked, as the call's input would be.
    assert "13800138000" not in Anomaly.objects.get(code="invalid_tool_input").detail


def test_a_call_in_flight_asked_again_gets_the_same_answer_and_no_new_attempt(client, session):
    first = check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    again = check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    assert again.status_code == 201
    assert {k: v for k, v in again.json().items() if k != "session"} == {
        k: v for k, v in first.json().items() if k != "session"
    }
    assert ToolAttempt.objects.count() == 1


def test_an_operation_id_reused_for_another_call_conflicts(client, session):
    check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    problem(
        check(client, session, "verify_phone", {"phone": "13900139000"}, operation_id="op-1"), 409, "operation_conflict"
    )
    problem(check(client, session, "flaky", {}, operation_id="op-1"), 409, "operation_conflict")
    client.post("/api/v1/sessions", {"machine": "tooling", "session_id": "s2"}, format="json")
    problem(check(client, "s2", "verify_phone", {"phone": PHONE}, operation_id="op-1"), 409, "operation_conflict")
    assert ToolAttempt.objects.count() == 1


def test_another_agent_may_use_the_same_operation_id(client, session):
    other = agent_api("other_bot", points=[])
    other.post("/api/v1/sessions", {"machine": "tooling", "session_id": "o1"}, format="json")
    check(client, session, "flaky", {}, operation_id="op-1")
    assert check(other, "o1", "flaky", {}, operation_id="op-1").status_code == 201


def test_a_finished_operation_is_refused_with_its_answer(client, session):
    check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    done = report(client, "op-1", output={"verified": True}).json()
    body = problem(
        check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1"), 409, "operation_finished"
    )
    assert body["answer"] == done and body["operation_id"] == "op-1"


def test_a_retry_before_its_time_is_refused_then_goes_ahead_as_the_next_attempt(client, session):
    check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    answer = report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"}).json()
    assert (answer["next"], answer["attempt"], answer["retry_after_ms"]) == ("retry", 2, 20)
    retried = check_when_due(client, session, "verify_phone", {"phone": PHONE}, "op-1")
    assert (retried.status_code, retried.json()["attempt"]) == (201, 2)
    assert ToolAttempt.objects.filter(call__operation_id="op-1").count() == 2


def test_a_retry_waiting_for_its_time_is_retry_in_progress(client, session):
    check(client, session, "slow_retry", {}, operation_id="op-1")
    report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"})
    body = problem(check(client, session, "slow_retry", {}, operation_id="op-1"), 409, "retry_in_progress")
    assert 590_000 < body["retry_after_ms"] <= 600_000


def test_the_retry_lease_holds_other_operations_of_the_state_until_the_retry_is_due(client, session):
    check(client, session, "slow_retry", {}, operation_id="waits")
    report(client, "waits", error={"code": "RATE_LIMIT_EXCEEDED"})
    body = problem(
        check(client, session, "verify_phone", {"phone": PHONE}, operation_id="new"), 409, "retry_in_progress"
    )
    assert body["waiting_operation_id"] == "waits" and body["retry_after_ms"] > 590_000
    assert not ToolCall.objects.filter(operation_id="new").exists()
    # Another state is not held: the lease is per session and state.
    move(client, session, "checking", "start")
    assert check(client, session, "verify_phone", {"phone": PHONE}, expected="checking").status_code == 201
    move(client, session, "asking", "checking")
    move(client, session, "checking", "asking")
    # The 10-minute backoff is not waited for in a test: its time is moved into the past instead.
    ToolCall.objects.filter(operation_id="waits").update(retry_at=timezone.now() - dt.timedelta(seconds=1))
    assert check(client, session, "verify_phone", {"phone": PHONE}, expected="checking").status_code == 201


def test_a_retry_beyond_what_the_policy_now_allows_is_refused(client, session):
    check(client, session, "slow_retry", {}, operation_id="op-1")
    report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"})
    # The contract changes while the retry waits: no retries for the code any more.
    lowered = TOOLS_DOCUMENT.replace(
        "max_retries: 3\n        backoff: {kind: fixed, base_ms: 600000",
        "max_retries: 0\n        backoff: {kind: fixed, base_ms: 600000",
    )
    assert lowered != TOOLS_DOCUMENT
    approved(lambda: config_import(text=lowered, source="test", actor=None, reason="no more retries"))
    ToolCall.objects.filter(operation_id="op-1").update(retry_at=timezone.now() - dt.timedelta(seconds=1))
    body = problem(check(client, session, "slow_retry", {}, operation_id="op-1"), 409, "retries_exhausted")
    assert body["attempts"] == 1 and ToolAttempt.objects.count() == 1


def test_a_rejected_call_is_refused(client, session):
    check(client, session, "flaky", {}, operation_id="op-1")
    # A person's rejection is agents.tools.approvals' to make (and test); here its outcome is set directly.
    ToolCall.objects.filter(operation_id="op-1").update(status=ToolCallStatus.REJECTED, decision_note="too risky")
    body = problem(check(client, session, "flaky", {}, operation_id="op-1"), 422, "tool_call_rejected")
    assert "too risky" in body["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tool": "flaky", "input": [], "expected_state": "start"}, "input"),
        ({"tool": "flaky", "input": {}, "expected_state": "start", "operation_id": "has space"}, "operation_id"),
        ({"tool": "flaky", "input": {}, "expected_state": "start", "operation_id": "x" * 65}, "operation_id"),
        ({"tool": "flaky", "input": {}}, "expected_state"),
        ({"tool": "flaky", "input": {}, "expected_state": "start", "extra": 1}, "extra"),
    ],
)
def test_malformed_checks_are_invalid_requests(client, session, body, field):
    answer = client.post(f"/api/v1/sessions/{session}/tool-calls", body, format="json")
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request")
    assert field in answer.json()["errors"]
    assert Session.objects.get(key=session).anomaly_count == 0

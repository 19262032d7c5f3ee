"""``POST /api/v1/tool-calls/<operation_id>/result`` over HTTP (DRF's test client): done, retry to
exhaustion, each ``on_exhausted`` kind, undeclared codes, invalid outputs, repeats and refusals."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from agents.sessions.models import Anomaly, Session, Transition
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from tests.support import agent_api
from tests.support.http import PROBLEM
from tests.support.tool_calls import PHONE, check, check_when_due, report

pytestmark = pytest.mark.django_db


def started(client, session, tool, input=None, operation_id="op-1"):
    answer = check(client, session, tool, input or {}, operation_id=operation_id)
    assert answer.status_code == 201, answer.json()
    return answer.json()


def test_an_output_that_matches_ends_the_operation(client, session):
    started(client, session, "verify_phone", {"phone": PHONE})
    answer = report(client, "op-1", output={"verified": True}, duration_ms=87)
    assert answer.status_code == 200
    body = answer.json()
    assert (body["next"], body["attempt"], body["operation_id"], body["late"]) == ("done", 1, "op-1", False)
    assert body["session"]["state"] == "start"
    call = ToolCall.objects.get()
    assert call.status == "done" and call.answer == body
    attempt = ToolAttempt.objects.get()
    assert (attempt.outcome, attempt.duration_ms, attempt.output_summary) == ("ok", 87, '{"verified":true}')


def test_the_same_result_twice_gets_the_same_answer(client, session):
    started(client, session, "verify_phone", {"phone": PHONE})
    first = report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"}).json()
    again = report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED", "message": "slow down"})
    assert again.status_code == 200 and again.json() == first
    # Whatever the repeat says: the attempt has its result, and the answer it got stands.
    assert report(client, "op-1", output={"verified": True}).json() == first
    assert ToolAttempt.objects.get().outcome == "error"


def test_retries_up_to_the_policy_then_the_default_hands_off(client, session):
    started(client, session, "verify_phone", {"phone": PHONE})
    for attempt in (1, 2):
        answer = report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"}).json()
        assert (answer["next"], answer["attempt"], answer["retry_after_ms"]) == ("retry", attempt + 1, 20)
        assert (
            check_when_due(client, session, "verify_phone", {"phone": PHONE}, "op-1").json()["attempt"] == attempt + 1
        )
    last = report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"}).json()
    assert (last["next"], last["attempt"]) == ("give_up", 3)
    assert last["session"]["state"] == "human_handoff" and last["session"]["handoff_reason"] == "tool_failure"
    move = Transition.objects.get(to_state="human_handoff")
    assert (move.kind, move.actor) == ("tool_gave_up", "system:tool-gave-up")
    assert ToolCall.objects.get().status == "gave_up" and ToolAttempt.objects.count() == 3


def test_a_code_that_is_not_retryable_gives_up_at_once(client, session):
    started(client, session, "verify_phone", {"phone": PHONE})
    body = report(client, "op-1", error={"code": "NOT_FOUND"}).json()
    assert body["next"] == "give_up" and body["session"]["state"] == "human_handoff"
    assert not Anomaly.objects.exists()


def test_an_undeclared_code_is_not_retried_and_is_an_anomaly(client, session):
    started(client, session, "flaky")
    body = report(client, "op-1", error={"code": "CONNECTION_RESET", "message": "call 13800138000"}).json()
    assert body["next"] == "give_up"
    anomaly = Anomaly.objects.get(code="undeclared_tool_error")
    assert "CONNECTION_RESET" in anomaly.detail
    attempt = ToolAttempt.objects.get()
    assert (attempt.error_code, attempt.declared, attempt.message) == ("CONNECTION_RESET", False, "call [phone]")
    assert Session.objects.get(key=session).anomaly_count == 0  # the upstream's doing: not counted


def test_an_output_its_schema_refuses_is_an_output_invalid_failure(client, session):
    started(client, session, "verify_phone", {"phone": PHONE})
    body = report(client, "op-1", output={"verified": "yes"}).json()
    assert body["next"] == "give_up"  # output_invalid is not declared by verify_phone: not retryable
    attempt = ToolAttempt.objects.get()
    # verify_phone does not declare output_invalid: the default policy, and no anomaly (Arbiter's own code).
    assert (attempt.outcome, attempt.error_code, attempt.declared) == ("output_invalid", "output_invalid", False)
    assert "/verified" in attempt.message and not Anomaly.objects.exists()


def test_on_exhausted_event_sends_the_machines_event(client, session):
    started(client, session, "to_event")
    body = report(client, "op-1", error={"code": "ANY"}).json()
    assert body["session"]["state"] == "asking"
    assert Transition.objects.get(to_state="asking").reason.endswith("event ask_customer")


def test_on_exhausted_state_moves_there(client, session):
    started(client, session, "to_state")
    assert report(client, "op-1", error={"code": "ANY"}).json()["session"]["state"] == "asking"


def test_an_on_exhausted_move_that_cannot_be_made_is_an_anomaly_and_hands_off(client, session):
    started(client, session, "to_nowhere")
    body = report(client, "op-1", error={"code": "ANY"}).json()
    assert body["session"]["state"] == "human_handoff" and body["session"]["handoff_reason"] == "tool_failure"
    assert "confirmed" in Anomaly.objects.get(code="tool_give_up_move_refused").detail


def test_a_result_after_the_deadline_is_recorded_and_says_late(client, session):
    started(client, session, "flaky")
    # A 10-second timeout is not waited out in a test: the attempt's deadline is moved into the past.
    ToolAttempt.objects.update(deadline=timezone.now() - dt.timedelta(seconds=1))
    body = report(client, "op-1", output={"any": "thing"}).json()
    assert (body["next"], body["late"]) == ("done", True)


def test_unknown_operations_and_another_agents_are_404(client, session):
    started(client, session, "flaky")
    answer = report(client, "nope", output={})
    assert (answer.status_code, answer["Content-Type"], answer.json()["code"]) == (404, PROBLEM, "unknown_operation")
    other = agent_api("other_bot", points=[])
    assert report(other, "op-1", output={}).json()["code"] == "unknown_operation"
    assert ToolAttempt.objects.get().finished_at is None


def test_a_result_without_an_attempt_in_flight_is_refused(client, session):
    started(client, session, "flaky")
    # A call waiting for a person has no attempt yet (agents.tools.approvals makes such calls).
    ToolCall.objects.filter(operation_id="op-1").update(status=ToolCallStatus.AWAITING_APPROVAL, attempt=0)
    answer = report(client, "op-1", output={})
    assert (answer.status_code, answer.json()["code"]) == (409, "no_attempt_in_flight")
    assert answer.json()["session"]["session_id"] == session


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"duration_ms": 1}, "output"),
        ({"output": {}, "error": {"code": "X"}, "duration_ms": 1}, "error"),
        ({"output": {}, "duration_ms": -1}, "duration_ms"),
        ({"output": {}, "duration_ms": 86_400_001}, "duration_ms"),
        ({"output": {}, "duration_ms": 1.5}, "duration_ms"),
        ({"output": {}}, "duration_ms"),
        ({"error": {"code": "has space"}, "duration_ms": 1}, "error"),
        ({"error": {"message": "no code"}, "duration_ms": 1}, "error"),
    ],
)
def test_malformed_results_are_invalid_requests(client, session, body, field):
    started(client, session, "flaky")
    answer = client.post("/api/v1/tool-calls/op-1/result", body, format="json")
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request"), answer.json()
    assert field in answer.json()["errors"]
    assert ToolAttempt.objects.get().finished_at is None


def test_attempts_failures_by_code_and_retries_are_counted_per_tool(
    client, session, django_capture_on_commit_callbacks
):
    def scrape():
        answer = client.get("/metrics")
        assert answer.status_code == 200
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.content.decode())
            for s in family.samples
        }

    def moved(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        started(client, session, "verify_phone", {"phone": PHONE})
        report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED"})
    with django_capture_on_commit_callbacks(execute=True):
        check_when_due(client, session, "verify_phone", {"phone": PHONE}, "op-1")
        report(client, "op-1", output={"verified": "not a boolean"})
    with django_capture_on_commit_callbacks(execute=True):
        # The invalid output gave up and handed the first session off: another session.
        client.post("/api/v1/sessions", {"machine": "tooling", "session_id": "s2"}, format="json")
        started(client, "s2", "flaky", operation_id="op-2")
        report(client, "op-2", error={"code": f"ANY_{PHONE}"})  # an agent's code of its own: not a label
    after = scrape()
    assert moved("arbiter_tool_calls_total", tool="verify_phone") == 2
    assert moved("arbiter_tool_retries_total", tool="verify_phone") == 1
    assert moved("arbiter_tool_failures_total", tool="verify_phone", code="RATE_LIMIT_EXCEEDED") == 1
    assert moved("arbiter_tool_failures_total", tool="verify_phone", code="output_invalid") == 1
    assert moved("arbiter_tool_failures_total", tool="flaky", code="undeclared") == 1
    assert not any(PHONE in str(labels) for _, labels in after)

"""``/actions`` judges an action's params by its tool's contract; tool-call attempts in the session's
timeline, through the agent API (its pages and cursors) and on the admin's session page."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client

from agents.sessions.models import Anomaly, Session
from agents.tools.models import ToolCall
from tests.support.tool_calls import PHONE, check, check_when_due, report

pytestmark = pytest.mark.django_db


def act(client, session, action, params):
    return client.post(f"/api/v1/sessions/{session}/actions", {"type": action, "params": params}, format="json")


def test_an_action_naming_a_tool_has_its_params_checked_against_the_input_schema(client, session):
    refused = act(client, session, "verify_phone", {"phone": "abc"})
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_tool_input")
    assert refused.json()["errors"] == {"/phone": ['"abc" does not match "^1[3-9][0-9]{9}$"']}
    assert refused.json()["session"]["session_id"] == session
    assert Anomaly.objects.filter(code="invalid_tool_input").count() == 1
    assert act(client, session, "verify_phone", {"param_name": "does_not_exist"}).status_code == 422
    allowed = act(client, session, "verify_phone", {"phone": PHONE})
    assert (allowed.status_code, allowed.json()["allowed"]) == (200, True)
    assert not ToolCall.objects.exists()  # an action check starts no call


def test_asking_about_a_tools_action_without_params_asks_the_whitelist_only(client, session):
    # "May I verify a phone here?" before the customer gave one is a fair question, not invalid input.
    answer = client.post(f"/api/v1/sessions/{session}/actions", {"type": "verify_phone"}, format="json")
    assert (answer.status_code, answer.json()["allowed"]) == (200, True)
    assert act(client, session, "verify_phone", {}).status_code == 422  # sent, even empty: checked
    assert Anomaly.objects.filter(code="invalid_tool_input").count() == 1


def test_an_action_without_a_contract_is_still_judged_by_the_whitelist_only(client, session):
    assert act(client, session, "transfer_to_human", {"anything": 1}).status_code == 200
    refused = act(client, session, "not_listed", {})
    assert (refused.status_code, refused.json()["code"]) == (422, "action_not_allowed")
    assert Anomaly.objects.filter(code="action_not_allowed").count() == 1


def test_the_whitelist_comes_before_the_params(client, session):
    client.post(f"/api/v1/sessions/{session}/transitions", {"to": "asking", "expected_state": "start"}, format="json")
    refused = act(client, session, "verify_phone", {"phone": "abc"})
    assert refused.json()["code"] == "action_not_allowed"
    assert not Anomaly.objects.filter(code="invalid_tool_input").exists()


def timeline(client, session, after=None, limit=50):
    query = f"?limit={limit}" + (f"&after={after}" if after is not None else "")
    answer = client.get(f"/api/v1/sessions/{session}/timeline{query}")
    assert answer.status_code == 200, answer.json()
    return answer.json()


def test_each_attempt_is_a_tool_invocation_and_each_failure_an_error_handled(client, session):
    check(client, session, "verify_phone", {"phone": PHONE}, operation_id="op-1")
    page = timeline(client, session)
    (started,) = page["events"]
    assert started["type"] == "tool_invocation" and started["outcome"] is None
    assert (started["tool"], started["attempt"], started["input"]) == ("verify_phone", 1, {"phone": "[phone]"})
    assert started["breaker_state"] == "closed"
    report(client, "op-1", error={"code": "RATE_LIMIT_EXCEEDED", "message": "for 13800138000"}, duration_ms=40)
    # Polling with the last page's cursor: the failure follows, once.
    (failed,) = timeline(client, session, after=page["next"])["events"]
    assert failed == {
        "sequence_id": failed["sequence_id"],
        "type": "error_handled",
        "at": failed["at"],
        "operation_id": "op-1",
        "tool": "verify_phone",
        "attempt": 1,
        "code": "RATE_LIMIT_EXCEEDED",
        "declared": True,
        "message": "for [phone]",
        "next": "retry",
        "duration_ms": 40,
    }
    check_when_due(client, session, "verify_phone", {"phone": PHONE}, "op-1")
    report(client, "op-1", output={"verified": True, "note": "13800138000"}, duration_ms=7)
    events = timeline(client, session)["events"]
    assert [(e["type"], e["attempt"]) for e in events] == [
        ("tool_invocation", 1),
        ("error_handled", 1),
        ("tool_invocation", 2),
        ("tool_result", 2),
    ]
    assert [e["sequence_id"] for e in events] == sorted(e["sequence_id"] for e in events)
    first, failure, second, result = events
    assert failure["sequence_id"] == failed["sequence_id"]
    assert (first["outcome"], first["duration_ms"], first["late"]) == ("error", 40, False)
    assert (second["outcome"], second["output_summary"]) == ("ok", '{"note":"[phone]","verified":true}')
    assert (result["outcome"], result["output_summary"], result["duration_ms"]) == (
        "ok",
        '{"note":"[phone]","verified":true}',
        7,
    )


def test_pages_of_a_timeline_with_attempts_neither_repeat_nor_skip(client, session):
    for n in range(3):
        check(client, session, "flaky", {}, operation_id=f"op-{n}")
        report(client, f"op-{n}", output={})
    check(client, session, "to_state", {}, operation_id="gives-up")
    report(client, "gives-up", error={"code": "NOPE"})
    everything = timeline(client, session)["events"]
    seen, after = [], None
    while True:
        page = timeline(client, session, after=after, limit=2)
        seen += page["events"]
        after = page["next"]
        if not page["has_more"]:
            break
    assert seen == everything
    # In the order the give-up's request wrote them: the undeclared error's anomaly, the move on_exhausted
    # made, then the attempt's result (its row is updated last: one statement with the call's).
    assert [e["type"] for e in everything][-4:] == ["tool_invocation", "anomaly", "state_transition", "error_handled"]
    assert everything[-1]["next"] == "give_up"


def test_a_cursor_of_the_timelines_earlier_form_is_refused_with_a_pointer_to_the_sequence(client, session):
    check(client, session, "flaky", {}, operation_id="op-1")
    old = {"t": 0, "d": None, "a": None, "q": None}  # the four-stream cursor pages gave out before
    text = base64.urlsafe_b64encode(json.dumps(old).encode()).decode().rstrip("=")
    answer = client.get(f"/api/v1/sessions/{session}/timeline?after={text}")
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_cursor")
    assert "sequence id" in answer.json()["detail"]
    assert [e["type"] for e in timeline(client, session, after=0)["events"]] == ["tool_invocation"]


def test_the_admin_session_page_and_the_tool_call_admin_show_the_attempts(client, session, staff_user):
    check(client, session, "flaky", {"phone": PHONE}, operation_id="op-1")
    report(client, "op-1", error={"code": "UPSTREAM_TIMEOUT"})
    browser = Client()
    browser.force_login(staff_user)
    page = browser.get(f"/admin/agents/session/{Session.objects.get(key=session).pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-kind="tool_invocation"' in html and 'data-kind="error_handled"' in html
    assert "UPSTREAM_TIMEOUT" in html and PHONE not in html
    call = ToolCall.objects.get()
    listing = browser.get("/admin/agents/toolcall/")
    assert listing.status_code == 200 and "op-1" in listing.content.decode()
    detail = browser.get(f"/admin/agents/toolcall/{call.pk}/change/")
    assert detail.status_code == 200 and "UPSTREAM_TIMEOUT" in detail.content.decode()
    assert browser.get("/admin/agents/toolcall/add/").status_code == 403

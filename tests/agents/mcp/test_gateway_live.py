"""The MCP gateway governing a real upstream (the demo's order tools, an SDK server in a process of its own)
for a real MCP client (the SDK's ``ClientSession`` over streamable HTTP) that knows nothing of Arbiter but
its token and session id, against Arbiter served by ``bin/serve``."""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from mcp.shared.exceptions import MCPError

from agents.sessions.models import Session
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from rules.governance.tokens import staff_token_create
from tests.support.breakers import SERVED_HEADERS
from tests.support.mcp_gateway import call_tool, rest, tool_names

ORDER = "SO20240002"  # paid, so it may change: in the demo's order book (examples/after_sales_agent/tools.py)


def counts(gateway) -> dict[str, int]:
    return dict(gateway.upstream.calls()["counts"])


def test_tools_are_listed_per_state_and_calls_are_governed(gateway):
    url, token = gateway.url, gateway.token
    # No session: only the read-only tool that no state names.
    assert tool_names(url, token) == ["orders.verify_phone"]
    gateway.session("s1")
    assert tool_names(url, token, session="s1") == ["orders.query_order"]

    # A tool the state does not allow: refused as a tool error the model can read; the upstream never saw it.
    refused = call_tool(url, token, "orders.update_order", {"order_id": ORDER, "address": "1 New Road"}, session="s1")
    assert refused.is_error and refused.structured_content["code"] == "tool_not_allowed"
    assert "'orders.update_order' is not allowed in 'identify'" in refused.content[0].text
    assert refused.structured_content["allowed_actions"] == ["orders.query_order"]

    # An input the contract refuses: every JSON pointer with the schema's message.
    invalid = call_tool(url, token, "orders.query_order", {"order_id": "abc"}, session="s1")
    assert invalid.is_error and invalid.structured_content["code"] == "invalid_tool_input"
    assert list(invalid.structured_content["errors"]) == ["/order_id"]
    assert '/order_id: "abc" does not match' in invalid.content[0].text
    assert counts(gateway) == {}

    # Two rate limits, then an answer: retried by the gateway within one tools/call.
    gateway.upstream.control(fail_next={"query_order": 2})
    answered = call_tool(url, token, "orders.query_order", {"order_id": ORDER}, session="s1")
    assert not answered.is_error, answered
    assert answered.structured_content["order_id"] == ORDER
    assert answered.meta["arbiter.dev/attempt"] == 3
    assert counts(gateway) == {"query_order": 3}
    operation = answered.meta["arbiter.dev/operation_id"]
    attempts = ToolAttempt.objects.filter(call__operation_id=operation).order_by("attempt")
    assert [a.error_code for a in attempts] == ["RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED", ""]

    # Moved on: the new state's tools.
    status, body = rest(
        url, token, "POST", "/api/v1/sessions/s1/transitions", {"to": "confirming", "expected_state": "identify"}
    )
    assert status == 200, body
    assert tool_names(url, token, session="s1") == ["orders.query_order", "orders.update_order"]

    # What the gateway answered and how long the upstream took, on the served /metrics.
    scraped = httpx.get(f"{url}/metrics", headers=SERVED_HEADERS, timeout=60).text
    assert 'arbiter_mcp_tool_calls_total{outcome="ok",tool="orders.query_order"} 1.0' in scraped
    assert 'arbiter_mcp_tool_calls_total{outcome="tool_not_allowed",tool="orders.update_order"} 1.0' in scraped
    assert 'arbiter_mcp_upstream_duration_seconds_count{server="orders"} 3.0' in scraped


def test_a_call_that_needs_a_person_waits_and_goes_through_once_approved(gateway):
    url, token = gateway.url, gateway.token
    gateway.session("s1", at="confirming")
    change = {"order_id": ORDER, "address": "1 New Road, Hangzhou"}

    waiting = call_tool(url, token, "orders.update_order", change, session="s1")
    assert waiting.is_error and waiting.structured_content["code"] == "awaiting_approval"
    assert "call again with the same input" in waiting.content[0].text
    operation = waiting.structured_content["operation_id"]
    # Asked again while the person has not decided: the same operation, still waiting.
    again = call_tool(url, token, "orders.update_order", change, session="s1")
    assert (again.structured_content["code"], again.structured_content["operation_id"]) == (
        "awaiting_approval",
        operation,
    )
    assert counts(gateway) == {}

    person = get_user_model().objects.create_user(username="approver", password="pw-approver-1", is_staff=True)
    person.user_permissions.add(Permission.objects.get(codename="approve_tool_calls"))
    session_pk = Session.objects.get(key="s1").pk
    staff_token = staff_token_create(user=person)
    status, body = rest(url, staff_token, "POST", f"/api/v1/queue/{session_pk}/approve", {})
    assert status == 200, body

    done = call_tool(url, token, "orders.update_order", change, session="s1")
    assert not done.is_error, done
    assert done.meta["arbiter.dev/operation_id"] == operation
    assert counts(gateway) == {"update_order": 1}
    # The model's "let me do that again": the same operation, which has finished; the upstream is not called.
    repeated = call_tool(url, token, "orders.update_order", change, session="s1")
    assert repeated.is_error and repeated.structured_content["code"] == "operation_finished"
    assert counts(gateway) == {"update_order": 1}

    # A person's rejection: the repeated call is refused with their note, and never reaches the upstream.
    gateway.session("s2", at="confirming")
    other = {"order_id": ORDER, "receiver_phone": "13700137000"}
    assert call_tool(url, token, "orders.update_order", other, session="s2").structured_content["code"] == (
        "awaiting_approval"
    )
    session_pk = Session.objects.get(key="s2").pk
    note = {"note": "The customer asked for no change."}
    status, body = rest(url, staff_token, "POST", f"/api/v1/queue/{session_pk}/reject", note)
    assert status == 200, body
    rejected = call_tool(url, token, "orders.update_order", other, session="s2")
    assert rejected.is_error and rejected.structured_content["code"] == "tool_call_rejected"
    assert "The customer asked for no change." in rejected.content[0].text
    assert counts(gateway) == {"update_order": 1}


def test_an_upstream_schema_change_is_held_back(gateway):
    url, token = gateway.url, gateway.token
    gateway.session("s1")
    assert tool_names(url, token, session="s1") == ["orders.query_order"]
    gateway.upstream.control(schema_version=2)  # query_order takes one more property: not the approved contract
    deadline = time.monotonic() + 30
    while tool_names(url, token, session="s1"):  # read again once its tools_refresh_s (1 s) has passed
        assert time.monotonic() < deadline, "the drifted tool is still offered"
        time.sleep(0.2)
    with pytest.raises(MCPError) as refused:
        call_tool(url, token, "orders.query_order", {"order_id": ORDER}, session="s1")
    assert "Unknown tool" in refused.value.message
    assert counts(gateway) == {}


def test_the_breaker_opened_through_one_process_refuses_on_the_other(two_gateways):
    one, two = two_gateways.urls
    token = two_gateways.token
    two_gateways.upstream.control(outage=True)
    # A failure the contract does not declare is given up at once, and the session handed to a person: each
    # call in a session of its own.
    for key in ("s1", "s2"):  # the contract's failure_threshold
        failed = call_tool(one, token, "orders.query_order", {"order_id": ORDER}, session=two_gateways.session(key))
        assert failed.is_error and failed.structured_content["code"] == "UNAVAILABLE", failed
    assert counts(two_gateways) == {"query_order": 2}

    refused = call_tool(two, token, "orders.query_order", {"order_id": ORDER}, session=two_gateways.session("s3"))
    assert refused.is_error and refused.structured_content["code"] == "circuit_open"
    assert refused.structured_content["retry_after_ms"] > 0
    assert counts(two_gateways) == {"query_order": 2}


def test_with_a_wait_set_the_call_waits_for_the_person_and_then_goes_through(patient_gateway):
    # ARBITER_MCP_APPROVAL_WAIT_S=60: one tools/call, answered once a person has approved it.
    gateway = patient_gateway
    gateway.session("s1", at="confirming")
    change = {"order_id": ORDER, "address": "2 Other Road, Hangzhou"}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(call_tool, gateway.url, gateway.token, "orders.update_order", change, session="s1")
        deadline = time.monotonic() + 60
        while not ToolCall.objects.filter(status=ToolCallStatus.AWAITING_APPROVAL).exists():
            assert time.monotonic() < deadline and not pending.done(), "the call never waited for a person"
            time.sleep(0.1)
        assert not pending.done()
        person = get_user_model().objects.create_user(username="approver", password="pw-approver-1", is_staff=True)
        person.user_permissions.add(Permission.objects.get(codename="approve_tool_calls"))
        session_pk = Session.objects.get(key="s1").pk
        status, body = rest(
            gateway.url, staff_token_create(user=person), "POST", f"/api/v1/queue/{session_pk}/approve", {}
        )
        assert status == 200, body
        done = pending.result(timeout=60)
    assert not done.is_error, done
    assert done.structured_content["updated"] == ["address"]
    assert counts(gateway) == {"update_order": 1}

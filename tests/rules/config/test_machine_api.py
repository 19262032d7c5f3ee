"""The agent's reads of how decisions move sessions: a point's ``machine``, ``state_map`` and
``fallback_state``, and ``GET /api/v1/machines/<key>`` for a machine its points use — over HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from rules.governance.tokens import staff_token_create
from tests.support import agent_api, make_user, post

pytestmark = pytest.mark.django_db


def test_a_point_says_how_its_outcomes_move_sessions(demo):
    client = agent_api()
    body = client.get("/api/v1/points/intent_routing").json()
    assert body["machine"] == "after_sales"
    assert body["fallback_state"] == "intent_clarify"
    assert body["state_map"]["refund_request"] == "refund_review"
    assert body["state_map"]["human_handoff"] == "human_handoff"
    listed = {p["key"]: p for p in client.get("/api/v1/points").json()["points"]}
    assert listed["refund_approval"]["state_map"] == {"auto_approve": "closed", "human_handoff": "human_handoff"}
    assert listed["refund_approval"]["fallback_state"] is None


def test_the_machine_of_the_agents_points(demo):
    answer = agent_api().get("/api/v1/machines/after_sales")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["key"], body["initial_state"], body["handoff_state"]) == ("after_sales", "init", "human_handoff")
    assert body["terminal_states"] == ["closed"]
    assert body["states"][0] == "init" and set(body["transitions"]) == set(body["states"]) == set(body["actions"])
    assert body["transitions"]["init"] == ["intent_clarify", "received", "human_handoff"]
    assert body["transitions"]["closed"] == []
    refund_review = ["query_order", "issue_refund", "transfer_to_human", "orders.query_order"]
    assert body["actions"]["refund_review"] == refund_review
    assert body["actions"]["human_handoff"] == []
    assert (body["timeouts"], body["max_anomalies"]) == ({}, 3)


@pytest.mark.parametrize("key", ["change_address", "nope", "After_Sales"])
def test_a_machine_none_of_its_points_use_is_unknown_whether_or_not_it_exists(demo, key):
    answer = agent_api().get(f"/api/v1/machines/{key}")
    assert (answer.status_code, answer["Content-Type"]) == (404, "application/problem+json")
    assert answer.json()["code"] == "unknown_machine"


def test_an_agent_without_a_point_of_the_machine_does_not_see_it(demo):
    answer = agent_api("nothing_bot", points=[]).get("/api/v1/machines/after_sales")
    assert (answer.status_code, answer.json()["code"]) == (404, "unknown_machine")


def test_staff_tokens_may_not_read_it(demo):
    staff = APIClient()
    staff.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=make_user('ed', 'config_editors'))}")
    assert staff.get("/api/v1/machines/after_sales").status_code == 403


@pytest.mark.parametrize(
    ("state", "action", "allowed"),
    [
        ("init", "query_order", True),
        ("init", "issue_refund", False),
        ("received", "update_order", True),
        ("refund_review", "issue_refund", True),
    ],
)
def test_the_demo_allows_the_after_sales_tools_where_they_make_sense(demo, state, action, allowed):
    client = agent_api()
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    path = {"init": [], "received": ["received"], "refund_review": ["received", "refund_review"]}[state]
    current = "init"
    for to in path:
        assert post(client, "/api/v1/sessions/s1/transitions", {"to": to, "expected_state": current}).status_code == 200
        current = to
    answer = post(client, "/api/v1/sessions/s1/actions", {"type": action})
    assert answer.status_code == (200 if allowed else 422), answer.content
    if allowed:
        assert answer.json()["allowed"] is True

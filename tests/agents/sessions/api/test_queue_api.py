"""The human queue's staff API over HTTP: list, claim, release, return to the bot, resolve; and what the
agent sees of it in GET /api/v1/sessions/<id>."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.queue.models import QueueEvent
from agents.sessions.models import Session, Transition
from rules.governance.tokens import staff_token_create
from tests.support import post

pytestmark = pytest.mark.django_db


def staff(username: str, *, operator: bool = True) -> APIClient:
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pw-123", is_staff=True)
    if operator:
        user.groups.add(Group.objects.get(name="queue_operators"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


@pytest.fixture
def ops():
    return staff("ops")


def handed_off_by_a_rule(client, key: str) -> int:
    """An after_sales session a decision moved to human_handoff (rule high_risk_keyword)."""
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": key}).status_code == 201
    body = {"point": "intent_routing", "session_id": key, "input": "我要投诉", "apply": True}
    decided = post(client, "/api/v1/decisions", body)
    assert decided.status_code == 201 and decided.json()["session"]["state"] == "human_handoff", decided.content
    return Session.objects.get(key=key).pk


def test_the_queue_lists_waiting_sessions_oldest_first_with_why_and_who(client, ops):
    first, second = handed_off_by_a_rule(client, "q1"), handed_off_by_a_rule(client, "q2")
    post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "not_waiting"})
    listed = ops.get("/api/v1/queue")
    assert listed.status_code == 200
    items = listed.json()["queue"]
    assert [i["id"] for i in items] == [first, second]
    item = items[0]
    assert set(item) == {
        "id",
        "session_id",
        "agent",
        "machine",
        "state",
        "reason",
        "waiting_seconds",
        "claimed_by",
        "proposed_call",
    }
    assert item["proposed_call"] is None
    assert (item["session_id"], item["agent"], item["machine"], item["state"], item["reason"], item["claimed_by"]) == (
        "q1",
        "support_bot",
        "after_sales",
        "human_handoff",
        "rule",
        None,
    )
    assert item["waiting_seconds"] >= 0
    assert ops.post(f"/api/v1/queue/{second}/claim").json()["claimed_by"] == "ops"
    assert [i["id"] for i in ops.get("/api/v1/queue?holder=mine").json()["queue"]] == [second]
    assert [i["id"] for i in ops.get("/api/v1/queue?holder=unclaimed").json()["queue"]] == [first]
    assert ops.get("/api/v1/queue?reason=timeout").json()["queue"] == []
    refused = ops.get("/api/v1/queue?reason=bored")
    assert refused.status_code == 422 and "reason" in refused.json()["errors"]


def test_claim_then_return_to_the_bot_and_the_agent_sees_it(client, ops):
    pk = handed_off_by_a_rule(client, "q1")
    claimed = ops.post(f"/api/v1/queue/{pk}/claim", {"note": "mine"}, format="json")
    assert claimed.status_code == 200 and claimed.json()["claimed_by"] == "ops"
    seen = client.get("/api/v1/sessions/q1").json()
    assert (seen["state"], seen["claimed_by"]) == ("human_handoff", "ops")

    returned = ops.post(f"/api/v1/queue/{pk}/return", {"state": "escalated", "note": "calm now"}, format="json")
    assert returned.status_code == 200, returned.content
    assert returned.json() == {"id": pk, "session_id": "q1", "from": "human_handoff", "state": "escalated", "seq": 2}
    seen = client.get("/api/v1/sessions/q1").json()
    assert (seen["state"], seen["seq"], seen["claimed_by"], seen["anomalies"]["count"]) == ("escalated", 2, None, 0)
    move = Transition.objects.get(session_id=pk, seq=2)
    assert (move.kind, move.actor, move.reason) == ("return", "operator:ops", "calm now")
    assert list(QueueEvent.objects.filter(session_id=pk).values_list("kind", "note")) == [("claim", "mine")]


def test_the_refusals_are_problems_with_codes(client, ops):
    pk = handed_off_by_a_rule(client, "q1")
    li = staff("li")
    assert li.post(f"/api/v1/queue/{pk}/claim").status_code == 200
    other = ops.post(f"/api/v1/queue/{pk}/claim")
    assert other.status_code == 409 and other["Content-Type"] == "application/problem+json"
    assert (other.json()["code"], other.json()["claimed_by"]) == ("claimed_by_other", "li")
    assert ops.post(f"/api/v1/queue/{pk}/release").json()["code"] == "claimed_by_other"
    assert li.post(f"/api/v1/queue/{pk}/release").json()["claimed_by"] is None

    illegal = ops.post(f"/api/v1/queue/{pk}/return", {"state": "closed"}, format="json")
    assert illegal.status_code == 422 and illegal.json()["code"] == "illegal_transition"
    assert illegal.json()["allowed_transitions"] == ["escalated"]
    no_note = ops.post(f"/api/v1/queue/{pk}/resolve", {"state": "closed", "note": " "}, format="json")
    assert no_note.status_code == 422 and no_note.json()["code"] == "invalid_request"

    resolved = ops.post(f"/api/v1/queue/{pk}/resolve", {"state": "closed", "note": "refunded"}, format="json")
    assert resolved.status_code == 200 and resolved.json()["state"] == "closed"
    gone = ops.post(f"/api/v1/queue/{pk}/claim")
    assert gone.status_code == 409 and gone.json()["code"] == "not_in_queue"
    assert ops.post("/api/v1/queue/999999/claim").status_code == 404


def test_agent_tokens_and_staff_without_the_permission_cannot_work_the_queue(client):
    pk = handed_off_by_a_rule(client, "q1")
    assert client.get("/api/v1/queue").status_code == 403
    viewer = staff("viewer", operator=False)
    refused = viewer.post(f"/api/v1/queue/{pk}/claim")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")

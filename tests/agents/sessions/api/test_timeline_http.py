"""``GET /api/v1/sessions/<id>/timeline``: a session's history for its agent, over HTTP on the real database.

Moves, field changes, decisions, anomalies and queue events in the service-wide order (``sequence_id``),
page by page after a sequence id, the free text masked as the decision log masks its input; the admin's
page shows the same events in the same order.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.sessions.models import Session
from agents.sessions.selectors import session_timeline
from rules.governance.tokens import staff_token_create
from tests.support import agent_api, decide, post

pytestmark = pytest.mark.django_db

PHONE = "13800138000"


@pytest.fixture
def ops():
    user = get_user_model().objects.create_user(username="ops", password="ops-pw-123", is_staff=True)
    user.groups.add(Group.objects.get(name="queue_operators"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def timeline(client, key: str, **query) -> dict:
    answer = client.get(f"/api/v1/sessions/{key}/timeline", query)
    assert answer.status_code == 200, answer.content
    return answer.json()


def history(client, ops) -> None:
    """s1: a refund word from init falls back (a decision, an anomaly, a move), a move with a phone number
    in its reason, a reported anomaly with an e-mail address, a complaint that hands it off, a claim."""
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    assert (
        decide(client, {"point": "intent_routing", "session_id": "s1", "input": "我要退款", "apply": True}).status_code
        == 201
    )
    moved = post(
        client,
        "/api/v1/sessions/s1/transitions",
        {"to": "received", "expected_state": "intent_clarify", "reason": f"customer {PHONE} confirmed"},
    )
    assert moved.status_code == 200, moved.content
    reported = post(
        client, "/api/v1/sessions/s1/anomalies", {"code": "invalid_json", "raw": "mail me at a.b@example.com"}
    )
    assert reported.status_code == 201
    complaint = decide(
        client, {"point": "intent_routing", "session_id": "s1", "input": f"我要投诉 {PHONE}", "apply": True}
    )
    assert complaint.json()["session"]["state"] == "human_handoff"
    queue_id = Session.objects.get(key="s1").pk
    assert ops.post(f"/api/v1/queue/{queue_id}/claim", {}, format="json").status_code == 200


def test_the_timeline_is_the_sessions_history_in_order_and_masked(client, ops):
    history(client, ops)
    body = timeline(client, "s1")
    assert body["session_id"] == "s1"
    assert body["has_more"] is False
    events = body["events"]
    assert [e["type"] for e in events] == [
        "decision", "anomaly", "state_transition", "state_transition", "anomaly", "decision", "state_transition",
        "queue",
    ]  # fmt: skip
    assert [e["sequence_id"] for e in events] == sorted({e["sequence_id"] for e in events})
    assert body["next"] == events[-1]["sequence_id"]
    refund, fell_back, fallback_move, move, reported, complaint, handoff, claim = events
    assert (refund["decision"], refund["ruled_by"], refund["rule"]) == ("refund_review", "hard_rule", "refund_trigger")
    assert (fell_back["code"], fell_back["decision_id"]) == ("rule_move_not_allowed", refund["id"])
    assert (fallback_move["from"], fallback_move["to"], fallback_move["seq"]) == ("init", "intent_clarify", 1)
    assert fallback_move["decision_id"] == refund["id"]
    assert (move["seq"], move["kind"], move["reason"]) == (2, "move", "customer [phone] confirmed")
    assert reported["raw"] == "mail me at [email]"
    assert complaint["input"] == "我要投诉 [phone]" and PHONE not in str(events)
    assert (handoff["to"], handoff["seq"]) == ("human_handoff", 3)
    assert (claim["kind"], claim["actor"]) == ("claim", "operator:ops")
    assert all(e["at"].endswith("Z") for e in events)
    # One selector: the admin's page reads the same events in the same order.
    admin = session_timeline(Session.objects.get(key="s1"))
    assert [e.sequence_id for e in admin] == [e["sequence_id"] for e in events]
    assert [e.kind for e in admin] == [e["type"].removeprefix("state_") for e in events]


def test_pages_follow_each_other_without_gaps_or_repeats(client, ops):
    history(client, ops)
    whole = timeline(client, "s1")["events"]
    pages, after = [], None
    while True:
        page = timeline(client, "s1", limit=3, **({"after": after} if after is not None else {}))
        pages += page["events"]
        after = page["next"]
        if not page["has_more"]:
            break
    assert pages == whole
    # The last ``next`` is where later events will appear: a runtime polls with it.
    assert timeline(client, "s1", after=after)["events"] == []
    assert post(client, "/api/v1/sessions/s1/anomalies", {"code": "invalid_json"}).status_code == 201
    later = timeline(client, "s1", after=after)
    assert [(e["type"], e["code"]) for e in later["events"]] == [("anomaly", "invalid_json")]
    assert later["next"] == later["events"][0]["sequence_id"] > after


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ({"after": "nonsense"}, 422, "invalid_cursor"),
        ({"after": "eyJ0IjowLCJkIjpudWxsLCJhIjpudWxsLCJxIjpudWxsfQ"}, 422, "invalid_cursor"),  # an earlier cursor
        ({"after": "-1"}, 422, "invalid_cursor"),
        ({"after": "1.5"}, 422, "invalid_cursor"),
        ({"after": "1" * 19}, 422, "invalid_cursor"),
        ({"after": ""}, 422, "invalid_cursor"),
        ({"limit": "0"}, 422, "invalid_request"),
        ({"limit": "201"}, 422, "invalid_request"),
        ({"limit": "ten"}, 422, "invalid_request"),
        ({"afterr": "x"}, 422, "invalid_request"),
    ],
)
def test_a_bad_cursor_or_limit_is_a_problem(client, query, status, code):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    answer = client.get("/api/v1/sessions/s1/timeline", query)
    assert (answer.status_code, answer["Content-Type"]) == (status, "application/problem+json")
    assert answer.json()["code"] == code


def test_another_agents_session_is_unknown(client):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    other = agent_api("other_bot")
    for query in ({}, {"after": "nonsense"}):
        answer = other.get("/api/v1/sessions/s1/timeline", query)
        assert (answer.status_code, answer.json()["code"]) == (404, "unknown_session")
    assert client.get("/api/v1/sessions/nope/timeline").json()["code"] == "unknown_session"


def test_a_field_update_is_a_field_change_masked_as_written(client):
    assert post(client, "/api/v1/sessions", {"machine": "change_address", "session_id": "s1"}).status_code == 201
    patched = client.patch(
        "/api/v1/sessions/s1/fields", {"updates": {"receiver_phone": PHONE}, "expected_state": "created"}, format="json"
    )
    assert patched.status_code == 200, patched.content
    (event,) = timeline(client, "s1")["events"]
    assert (event["type"], event["kind"], event["to"]) == ("field_change", "fields", "created")
    assert PHONE not in str(event)

"""A session in its machine's handoff state is the operators' (agents/sessions/handoff.py), over HTTP.

Each path into the handoff state — a rule's outcome, the point's fallback, the timeout sweep, the
model-failure policy, the agent's own move or interrupt — sets ``handoff_reason``, which the agent and the
staff queue both show; from there every agent call that would move the session (move, interrupt,
resume, decide with ``apply``) is ``409 session_handed_off`` and an anomaly, while the human queue's
return and resolve still work. Runs on SQLite and PostgreSQL alike (``DATABASE_URL``).
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import F
from rest_framework.test import APIClient

from agents.sessions.models import Anomaly, Session, Transition
from agents.sessions.timeouts import session_timeouts_sweep
from rules.config.records import point_save
from rules.governance.tokens import staff_token_create
from rules.models import DecisionPoint, DecisionRecord
from tests.support import approved, move_of, post

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def ops():
    user = get_user_model().objects.create_user(username="ops", password="ops-pw-123", is_staff=True)
    user.groups.add(Group.objects.get(name="queue_operators"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def start(client, key: str, machine: str = "after_sales") -> None:
    created = post(client, "/api/v1/sessions", {"machine": machine, "session_id": key})
    assert created.status_code == 201, created.content


def detail(client, key: str) -> dict:
    read = client.get(f"/api/v1/sessions/{key}")
    assert read.status_code == 200, read.content
    return read.json()


def assert_handed_off(answer, *, state: str, seq: int, reason: str) -> dict:
    assert answer.status_code == 409, answer.content
    assert answer["Content-Type"] == PROBLEM
    body = answer.json()
    assert (body["code"], body["state"], body["seq"], body["handoff_reason"]) == (
        "session_handed_off",
        state,
        seq,
        reason,
    ), body
    return body


def assert_agent_cannot_move_it(client, key: str, *, reason: str, point: str = "intent_routing") -> None:
    """Every agent call that would move the session is refused; nothing moves, each refusal is an anomaly."""
    before = detail(client, key)
    state, seq, anomalies = before["state"], before["seq"], before["anomalies"]["count"]
    assert (before["handoff_reason"], state) == (reason, "human_handoff"), before
    base = f"/api/v1/sessions/{key}"
    refusals = [
        post(client, f"{base}/interrupt", {"to": "received", "expected_state": state}),
        post(client, f"{base}/resume", {"expected_state": state}),
        post(client, f"{base}/transitions", {"to": "closed", "expected_state": state}),
        post(client, f"{base}/transitions", {"to": "escalated", "expected_state": state}),
        post(client, "/api/v1/decisions", {"point": point, "session_id": key, "input": "我要退款", "apply": True}),
    ]
    for refused in refusals:
        assert_handed_off(refused, state=state, seq=seq, reason=reason)
    after = detail(client, key)
    assert (after["state"], after["seq"], after["handoff_reason"]) == (state, seq, reason)
    assert after["anomalies"]["count"] == anomalies + len(refusals)
    assert after["anomalies"]["latest"][: len(refusals)] == ["session_handed_off"] * len(refusals)
    assert Transition.objects.filter(session__key=key).count() == seq
    # A decide that moves nothing is still answered: rules may see where the session is.
    read_only = post(client, "/api/v1/decisions", {"point": point, "session_id": key, "input": "我要退款"})
    assert read_only.status_code == 201, read_only.content


def test_a_rules_handoff_stays_with_the_operators_until_one_returns_it(client, ops):
    start(client, "r1")
    decided = post(
        client, "/api/v1/decisions", {"point": "intent_routing", "session_id": "r1", "input": "我要投诉", "apply": True}
    )
    assert decided.status_code == 201 and decided.json()["session"]["state"] == "human_handoff", decided.content
    assert_agent_cannot_move_it(client, "r1", reason="rule")
    # No decision was logged for the refused decide with apply: only the first and the read-only one.
    assert DecisionRecord.objects.filter(session_id="r1").count() == 2
    # Staff see the same reason, and the queue still works.
    pk = Session.objects.get(key="r1").pk
    (item,) = ops.get("/api/v1/queue").json()["queue"]
    assert (item["id"], item["reason"]) == (pk, "rule")
    assert [i["id"] for i in ops.get("/api/v1/queue?reason=rule").json()["queue"]] == [pk]
    returned = ops.post(f"/api/v1/queue/{pk}/return", {"state": "escalated", "note": "calm"}, format="json")
    assert returned.status_code == 200, returned.content
    seen = detail(client, "r1")
    assert (seen["state"], seen["handoff_reason"], seen["anomalies"]["count"]) == ("escalated", None, 0)
    moved = post(client, "/api/v1/sessions/r1/transitions", {"to": "closed", "expected_state": "escalated"})
    assert moved.status_code == 200, moved.content


def test_a_model_failure_handoff_cannot_be_left_by_a_plain_move(client):
    start(client, "m1")
    for _ in range(3):
        post(client, "/api/v1/sessions/m1/anomalies", {"code": "invalid_json"})
    assert detail(client, "m1")["state"] == "human_handoff"
    assert_agent_cannot_move_it(client, "m1", reason="model_failure")


def test_a_timeout_handoff_is_the_operators(client):
    start(client, "t1")
    moved = post(client, "/api/v1/sessions/t1/transitions", {"to": "received", "expected_state": "init"})
    assert moved.status_code == 200
    start(client, "t2", machine="change_address")
    post(client, "/api/v1/sessions/t2/transitions", {"to": "awaiting_intent", "expected_state": "created"})
    Session.objects.filter(key="t2").update(state_entered_at=F("state_entered_at") - dt.timedelta(minutes=5))
    assert session_timeouts_sweep() == 1
    seen = detail(client, "t2")
    assert (seen["state"], seen["handoff_reason"]) == ("human_handoff", "timeout")
    state, seq = seen["state"], seen["seq"]
    for refused in [
        post(client, "/api/v1/sessions/t2/transitions", {"to": "failed", "expected_state": state}),
        post(client, "/api/v1/sessions/t2/interrupt", {"to": "awaiting_intent", "expected_state": state}),
    ]:
        assert_handed_off(refused, state=state, seq=seq, reason="timeout")


def test_the_agents_own_move_into_the_handoff_state_is_final_for_it(client):
    start(client, "a1")
    moved = post(client, "/api/v1/sessions/a1/transitions", {"to": "human_handoff", "expected_state": "init"})
    assert moved.status_code == 200, moved.content
    assert_agent_cannot_move_it(client, "a1", reason="agent")


def test_an_interrupt_into_the_handoff_state_cannot_be_resumed_out_of(client):
    start(client, "i1")
    post(client, "/api/v1/sessions/i1/transitions", {"to": "received", "expected_state": "init"})
    into = post(client, "/api/v1/sessions/i1/interrupt", {"to": "human_handoff", "expected_state": "received"})
    assert into.status_code == 200, into.content
    assert detail(client, "i1")["interrupt_stack"] == ["received"]
    assert_agent_cannot_move_it(client, "i1", reason="agent")


def test_a_fallback_into_the_handoff_state_says_so(client, actor):
    point = DecisionPoint.objects.get(key="intent_routing")
    point.fallback_state = "human_handoff"
    approved(lambda: point_save(point=point, actor=actor, reason="refunds we cannot route go to a person"))
    start(client, "f1")
    # refund_review is not allowed from init: the point falls back, now to the handoff state.
    decided = post(
        client, "/api/v1/decisions", {"point": "intent_routing", "session_id": "f1", "input": "我要退款", "apply": True}
    )
    assert decided.status_code == 201, decided.content
    assert move_of(decided.json()["session"]) == {"from": "init", "state": "human_handoff", "seq": 1}
    assert Transition.objects.get(session__key="f1", seq=1).kind == "fallback"
    assert_agent_cannot_move_it(client, "f1", reason="fallback")


def test_a_refused_move_is_recorded_as_the_agents_anomaly(client):
    start(client, "n1")
    post(client, "/api/v1/sessions/n1/transitions", {"to": "human_handoff", "expected_state": "init"})
    post(client, "/api/v1/sessions/n1/transitions", {"to": "closed", "expected_state": "human_handoff"})
    anomaly = Anomaly.objects.get(session_id="n1")
    assert anomaly.code == "session_handed_off"
    assert "closed" in anomaly.detail and "agent" in anomaly.detail


def test_a_stale_expected_state_is_still_a_state_mismatch(client):
    """The lock comes first: an agent that did not know the session was handed off learns where it is."""
    start(client, "s1")
    post(client, "/api/v1/sessions/s1/transitions", {"to": "human_handoff", "expected_state": "init"})
    stale = post(client, "/api/v1/sessions/s1/transitions", {"to": "closed", "expected_state": "received"})
    assert stale.status_code == 409 and stale.json()["code"] == "state_mismatch"
    assert stale.json()["state"] == "human_handoff"


def test_a_resume_cannot_undo_the_state_a_person_returned_the_session_to(client, ops):
    """An interrupt stack from before the handoff is gone once a person returns the session: resuming
    would put it back where the agent was, over the person's decision."""
    start(client, "st1")
    for before, to in (("init", "received"), ("received", "refund_review")):
        moved = post(client, "/api/v1/sessions/st1/transitions", {"to": to, "expected_state": before})
        assert moved.status_code == 200, moved.content
    paused = post(client, "/api/v1/sessions/st1/interrupt", {"to": "intent_clarify", "expected_state": "refund_review"})
    assert paused.status_code == 200, paused.content
    handed = post(
        client,
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "st1", "input": "我要投诉", "apply": True},
    )
    assert handed.json()["session"]["state"] == "human_handoff", handed.content
    pk = Session.objects.get(key="st1").pk
    returned = ops.post(f"/api/v1/queue/{pk}/return", {"state": "escalated", "note": "calm"}, format="json")
    assert returned.status_code == 200, returned.content
    resumed = post(client, "/api/v1/sessions/st1/resume", {"expected_state": "escalated"})
    assert resumed.status_code == 409, resumed.content
    assert resumed.json()["code"] == "nothing_to_resume"
    assert detail(client, "st1")["state"] == "escalated"


@pytest.mark.parametrize(
    ("stored", "state", "expected"),
    [
        # A row whose stored reason outlived its wait (kept from before every move cleared it): none.
        ("agent", "received", None),
        # A row in the handoff state from before every path recorded why: unknown, for everyone.
        ("", "human_handoff", "unknown"),
        ("agent", "human_handoff", "agent"),
    ],
)
def test_the_agent_the_queue_and_the_admin_show_one_reason(client, ops, stored, state, expected):
    from django.test import Client

    start(client, "s1")
    # The row as older code left it: only the stored column and the state are set back here.
    Session.objects.filter(key="s1").update(state=state, handoff_reason=stored)
    assert detail(client, "s1")["handoff_reason"] == expected
    queue = {item["session_id"]: item for item in ops.get("/api/v1/queue").json()["queue"]}
    assert (queue["s1"]["reason"] if "s1" in queue else None) == expected
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser(username="auditor", password="auditor-pw-1"))
    session = Session.objects.get(key="s1")
    page = admin.get(f"/admin/agents/session/{session.pk}/change/").content.decode()
    listing = admin.get("/admin/agents/session/").content.decode()
    shown = '<td class="field-handoff_reason_label">{}</td>'.format(expected or "—")
    assert shown in listing
    assert (expected or "—") in page.split("field-handoff_reason_label", 1)[1][:400]

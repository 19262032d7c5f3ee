from __future__ import annotations

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from tests.support import move_of, post, without_session

pytestmark = pytest.mark.django_db


def test_create_move_and_read_a_session(client):
    r = post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"})
    assert r.status_code == 201, r.content
    assert without_session(r.json()) == {
        "session_id": "s1",
        "machine": "after_sales",
        "state": "init",
        "seq": 0,
        "allowed_transitions": ["intent_clarify", "received", "human_handoff"],
        "allowed_actions": ["verify_phone", "query_order", "orders.verify_phone", "orders.query_order"],
    }
    moved = post(client, "/api/v1/sessions/s1/transitions", {"to": "received", "expected_state": "init"})
    assert move_of(moved.json()) == {"from": "init", "state": "received", "seq": 1}
    stale = post(client, "/api/v1/sessions/s1/transitions", {"to": "closed", "expected_state": "init"})
    assert stale.status_code == 409
    assert (stale.json()["code"], stale.json()["state"], stale.json()["seq"]) == ("state_mismatch", "received", 1)
    illegal = post(client, "/api/v1/sessions/s1/transitions", {"to": "init", "expected_state": "received"})
    assert illegal.status_code == 422 and illegal.json()["code"] == "illegal_transition"
    assert illegal.json()["allowed_transitions"] == ["refund_review", "human_handoff", "closed"]
    assert Anomaly.objects.get().code == "illegal_transition"
    detail = client.get("/api/v1/sessions/s1").json()
    assert detail["anomalies"] == {"count": 1, "latest": ["illegal_transition"]}
    assert list(Transition.objects.values_list("seq", "from_state", "to_state")) == [(1, "init", "received")]


def test_decide_and_move_in_one_step_with_the_seed_fallback(client):
    post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s2"})
    # init cannot go to refund_review: the point's fallback (clarify) applies and an anomaly is recorded.
    r = post(
        client, "/api/v1/decisions", {"point": "intent_routing", "session_id": "s2", "input": "我要退款", "apply": True}
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["decision"] == "refund_review"
    assert move_of(body["session"]) == {"from": "init", "state": "intent_clarify", "seq": 1}
    # A rule decided: the refused mapping is the configuration's, not counted against the model.
    assert Anomaly.objects.get().code == "rule_move_not_allowed"
    assert Session.objects.get(key="s2").state == "intent_clarify"
    r = post(
        client,
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "session_id": "s2",
            "input": "颜色",
            "candidate": {"decision": "product_info", "confidence": 0.9},
            "apply": True,
        },
    )
    assert move_of(r.json()["session"]) == {"from": "intent_clarify", "state": "received", "seq": 2}
    assert Transition.objects.get(seq=2).decision_id is not None

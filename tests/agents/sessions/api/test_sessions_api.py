"""The session API through Django's HTTP layer: answer shapes, and every refusal as problem+json with its code."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import OperationalError
from django.db.models.query import QuerySet
from rest_framework.test import APIClient

from agents.sessions import reads as sessions_module
from agents.sessions.models import Anomaly, Session, Transition
from tests.support import move_of, post, without_session

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def world(client):
    """Sessions in a few situations: ``s`` fresh, ``done`` closed, ``addr`` of the other machine,
    ``used`` with a move made under Idempotency-Key ``k1``."""
    for key, machine in [
        ("s", "after_sales"),
        ("done", "after_sales"),
        ("addr", "change_address"),
        ("used", "after_sales"),
    ]:
        assert post(client, "/api/v1/sessions", {"machine": machine, "session_id": key}).status_code == 201
    post(client, "/api/v1/sessions/done/transitions", {"to": "received", "expected_state": "init"})
    post(client, "/api/v1/sessions/done/transitions", {"to": "closed", "expected_state": "received"})
    post(
        client,
        "/api/v1/sessions/used/transitions",
        {"to": "received", "expected_state": "init"},
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    return client


def move(to: str, expected: str, **extra: Any) -> dict[str, Any]:
    return {"to": to, "expected_state": expected, **extra}


REFUSALS = [
    # (what, method, path, body, headers, status, code)
    ("unknown machine", "post", "/api/v1/sessions", {"machine": "nope"}, {}, 404, "unknown_machine"),
    (
        "session exists",
        "post",
        "/api/v1/sessions",
        {"machine": "after_sales", "session_id": "s"},
        {},
        409,
        "session_exists",
    ),
    (
        "id with a slash",
        "post",
        "/api/v1/sessions",
        {"machine": "after_sales", "session_id": "a/b"},
        {},
        422,
        "invalid_request",
    ),
    (
        "unknown field",
        "post",
        "/api/v1/sessions",
        {"machine": "after_sales", "colour": "red"},
        {},
        422,
        "invalid_request",
    ),
    (
        "NUL in context",
        "post",
        "/api/v1/sessions",
        {"machine": "after_sales", "context": {"k": ["a\x00"]}},
        {},
        422,
        "invalid_request",
    ),
    (
        "context not an object",
        "post",
        "/api/v1/sessions",
        {"machine": "after_sales", "context": [1]},
        {},
        422,
        "invalid_request",
    ),
    ("unknown session", "get", "/api/v1/sessions/nope", None, {}, 404, "unknown_session"),
    ("stale state", "post", "/api/v1/sessions/done/transitions", move("escalated", "init"), {}, 409, "state_mismatch"),
    ("illegal move", "post", "/api/v1/sessions/s/transitions", move("closed", "init"), {}, 422, "illegal_transition"),
    ("closed", "post", "/api/v1/sessions/done/transitions", move("escalated", "closed"), {}, 409, "session_closed"),
    ("no expected state", "post", "/api/v1/sessions/s/transitions", {"to": "received"}, {}, 422, "invalid_request"),
    (
        "expected state not text",
        "post",
        "/api/v1/sessions/s/transitions",
        move("received", 0),
        {},
        422,
        "invalid_request",
    ),
    (
        "bad decision id",
        "post",
        "/api/v1/sessions/s/transitions",
        move("received", "init", decision_id="x"),
        {},
        422,
        "invalid_request",
    ),
    (
        "decision id as a number",
        "post",
        "/api/v1/sessions/s/transitions",
        move("received", "init", decision_id=uuid.uuid4().int),
        {},
        422,
        "invalid_request",
    ),
    (
        "unknown decision",
        "post",
        "/api/v1/sessions/s/transitions",
        move("received", "init", decision_id=str(uuid.uuid4())),
        {},
        422,
        "invalid_request",
    ),
    (
        "long idempotency key",
        "post",
        "/api/v1/sessions/s/transitions",
        move("received", "init"),
        {"HTTP_IDEMPOTENCY_KEY": "k" * 201},
        422,
        "invalid_request",
    ),
    (
        "key reused",
        "post",
        "/api/v1/sessions/used/transitions",
        move("closed", "received"),
        {"HTTP_IDEMPOTENCY_KEY": "k1"},
        409,
        "idempotency_conflict",
    ),
    (
        "action not allowed",
        "post",
        "/api/v1/sessions/addr/actions",
        {"type": "change_address"},
        {},
        422,
        "action_not_allowed",
    ),
    ("action without type", "post", "/api/v1/sessions/addr/actions", {"params": {}}, {}, 422, "invalid_request"),
    ("action, unknown session", "post", "/api/v1/sessions/nope/actions", {"type": "x"}, {}, 404, "unknown_session"),
    (
        "interrupt to terminal",
        "post",
        "/api/v1/sessions/s/interrupt",
        move("closed", "init"),
        {},
        422,
        "illegal_transition",
    ),
    (
        "interrupt to itself",
        "post",
        "/api/v1/sessions/s/interrupt",
        move("init", "init"),
        {},
        422,
        "illegal_transition",
    ),
    (
        "interrupt to nowhere",
        "post",
        "/api/v1/sessions/s/interrupt",
        move("nowhere", "init"),
        {},
        422,
        "illegal_transition",
    ),
    (
        "interrupt closed",
        "post",
        "/api/v1/sessions/done/interrupt",
        move("received", "closed"),
        {},
        409,
        "session_closed",
    ),
    (
        "nothing to resume",
        "post",
        "/api/v1/sessions/s/resume",
        {"expected_state": "init"},
        {},
        409,
        "nothing_to_resume",
    ),
    ("stale resume", "post", "/api/v1/sessions/s/resume", {"expected_state": "received"}, {}, 409, "state_mismatch"),
    ("anomaly code", "post", "/api/v1/sessions/s/anomalies", {"code": "Not A Code"}, {}, 422, "invalid_request"),
    ("anomaly, unknown session", "post", "/api/v1/sessions/nope/anomalies", {"code": "x"}, {}, 404, "unknown_session"),
    (
        "apply, unknown session",
        "post",
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "nope", "input": "我要退款", "apply": True},
        {},
        404,
        "unknown_session",
    ),
    (
        "apply, closed",
        "post",
        "/api/v1/decisions",
        {"point": "refund_approval", "session_id": "done", "facts": {"refund_amount": 5}, "apply": True},
        {},
        409,
        "session_closed",
    ),
    (
        "apply, another machine",
        "post",
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "addr", "input": "我要退款", "apply": True},
        {},
        422,
        "machine_mismatch",
    ),
    (
        "apply, no session",
        "post",
        "/api/v1/decisions",
        {"point": "intent_routing", "input": "我要退款", "apply": True},
        {},
        422,
        "invalid_request",
    ),
    (
        "apply not a boolean",
        "post",
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "s", "apply": "yes"},
        {},
        422,
        "invalid_request",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status", "code"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_every_refusal_is_problem_json_with_its_code(world, method, path, body, headers, status, code):
    before = {s.key: (s.state, s.seq) for s in Session.objects.all()}
    rows = Transition.objects.count()
    call = world.get if method == "get" else world.post
    response = call(path, body, format="json", **headers)
    assert response["Content-Type"] == PROBLEM, response.content
    problem = response.json()
    assert (response.status_code, problem["code"], problem["status"]) == (status, code, status), problem
    assert problem["type"].endswith(f"/{code}") and problem["title"] and problem["detail"]
    # A refusal moves nothing.
    assert {s.key: (s.state, s.seq) for s in Session.objects.all()} == before
    assert Transition.objects.count() == rows


def test_conflicts_carry_the_current_state_and_seq(world):
    stale = post(world, "/api/v1/sessions/done/transitions", move("escalated", "init")).json()
    assert (stale["state"], stale["seq"]) == ("closed", 2)
    closed = post(world, "/api/v1/sessions/done/transitions", move("escalated", "closed")).json()
    assert (closed["state"], closed["seq"]) == ("closed", 2)
    illegal = post(world, "/api/v1/sessions/s/transitions", move("closed", "init")).json()
    assert illegal["allowed_transitions"] == ["intent_clarify", "received", "human_handoff"]
    assert (illegal["state"], illegal["seq"], illegal["handed_off"]) == ("init", 0, False)
    refused = post(world, "/api/v1/sessions/addr/actions", {"type": "change_address"}).json()
    assert (refused["allowed_actions"], refused["state"]) == ([], "created")
    assert list(Anomaly.objects.order_by("created_at", "pk").values_list("session_id", "code")) == [
        ("s", "illegal_transition"),
        ("addr", "action_not_allowed"),
    ]


def test_unauthenticated_and_malformed_requests(world):
    anonymous = APIClient()
    response = anonymous.get("/api/v1/sessions/s")
    assert (response.status_code, response["Content-Type"], response.json()["code"]) == (
        401,
        PROBLEM,
        "not_authenticated",
    )
    assert response.has_header("WWW-Authenticate")
    malformed = world.post("/api/v1/sessions/s/transitions", data="{not json", content_type="application/json")
    assert (malformed.status_code, malformed.json()["code"]) == (400, "malformed_json")


def test_session_detail(world):
    post(world, "/api/v1/sessions/s/transitions", move("received", "init", reason="asked about an order"))
    post(world, "/api/v1/sessions/s/interrupt", move("escalated", "received"))
    post(world, "/api/v1/sessions/s/anomalies", {"code": "invalid_json", "detail": "not JSON", "raw": "{oops"})
    body = world.get("/api/v1/sessions/s").json()
    seconds = body.pop("seconds_in_state")
    assert body.pop("session")["state"] == "escalated"
    assert 0 <= seconds < 60
    assert body == {
        "session_id": "s",
        "machine": "after_sales",
        "state": "escalated",
        "seq": 2,
        "allowed_transitions": ["closed"],
        "allowed_actions": ["query_order", "transfer_to_human", "orders.query_order"],  # the demo's escalated state
        "interrupt_stack": ["received"],
        "terminal": False,
        "anomalies": {"count": 1, "latest": ["invalid_json"]},
        "handoff_reason": None,
        "claimed_by": None,
        "feedback": [],
        "context": {},
        "fields": {},
        "missing": {},
    }
    raw = Anomaly.objects.get(session_id="s")
    assert (raw.code, raw.detail, raw.raw, raw.agent.name) == ("invalid_json", "not JSON", "{oops", "support_bot")


def test_an_allowed_action(world):
    post(world, "/api/v1/sessions/addr/transitions", move("awaiting_intent", "created"))
    post(world, "/api/v1/sessions/addr/transitions", move("collecting_params", "awaiting_intent"))
    response = post(
        world, "/api/v1/sessions/addr/actions", {"type": "request_param", "params": {"name": "receiver_phone"}}
    )
    assert (response.status_code, without_session(response.json())) == (
        200,
        {"allowed": True, "allowed_actions": ["request_param", "cancel_intent"]},
    )
    assert response.json()["session"]["allowed_actions"] == ["request_param", "cancel_intent"]
    assert not Anomaly.objects.exists()


def test_an_interrupt_and_a_resume_answer_like_a_move(world):
    assert move_of(post(world, "/api/v1/sessions/s/interrupt", move("escalated", "init")).json()) == {
        "from": "init",
        "state": "escalated",
        "seq": 1,
    }
    assert move_of(post(world, "/api/v1/sessions/s/resume", {"expected_state": "escalated"}).json()) == {
        "from": "escalated",
        "state": "init",
        "seq": 2,
    }


def test_decide_with_apply_answers_with_the_move_and_feedback(world):
    response = post(
        world,
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "session_id": "s",
            "input": "我要投诉",
            "candidate": {"decision": "general_query", "confidence": 0.9},
            "apply": True,
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert move_of(body["session"]) == {"from": "init", "state": "human_handoff", "seq": 1}
    assert body["feedback"] == []
    # Without apply there is no "session" member, but feedback still comes with a session id.
    plain = post(
        world,
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "session_id": "s",
            "input": "投诉",
            "candidate": {"decision": "product_info", "confidence": 0.8},
        },
    ).json()
    assert "from" not in plain["session"]  # no move without apply; the session object all the same
    assert len(plain["feedback"]) == 1 and "high_risk_keyword" in plain["feedback"][0]
    assert "feedback" not in post(world, "/api/v1/decisions", {"point": "intent_routing", "input": "我要投诉"}).json()


def test_a_move_may_cite_the_decision_behind_it(world):
    decided = post(
        world, "/api/v1/decisions", {"point": "intent_routing", "session_id": "s", "input": "我要退款"}
    ).json()
    response = post(world, "/api/v1/sessions/s/transitions", move("human_handoff", "init", decision_id=decided["id"]))
    assert response.status_code == 200
    assert str(Transition.objects.get(session__key="s").decision_id) == decided["id"]


def test_a_database_too_busy_to_lock_the_session_is_a_503(world, monkeypatch):
    """SQLite: other writers kept the database locked for the whole busy timeout. The agent is told to
    retry (503 session_busy), not handed a server error."""
    real_update = QuerySet.update

    def locked(self, **kwargs):
        if self.model is Session:
            raise OperationalError("database is locked")
        return real_update(self, **kwargs)

    monkeypatch.setattr(sessions_module, "connection", SimpleNamespace(vendor="sqlite"))
    monkeypatch.setattr(QuerySet, "update", locked)
    response = post(world, "/api/v1/sessions/s/transitions", move("received", "init"))
    assert (response.status_code, response["Content-Type"], response.json()["code"]) == (503, PROBLEM, "session_busy")
    # Other operational errors are not hidden.
    monkeypatch.setattr(
        QuerySet, "update", lambda self, **kw: (_ for _ in ()).throw(OperationalError("disk I/O error"))
    )
    with pytest.raises(OperationalError):
        post(world, "/api/v1/sessions/s/transitions", move("received", "init"))

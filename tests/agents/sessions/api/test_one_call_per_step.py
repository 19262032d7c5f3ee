"""Issue 23, the write side: a runtime's turn needs no extra read. Every answer and refusal about a session
carries the session object; decide-and-move is one safe call; the needs-candidate answer carries the
prompt; rule-driven fallbacks are not the model's failures; one Idempotency-Key scope per agent."""

from __future__ import annotations

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from rules.models import DecisionRecord
from tests.support import agent_api, post

pytestmark = pytest.mark.django_db

SESSION_KEYS = {
    "session_id",
    "machine",
    "state",
    "seq",
    "allowed_transitions",
    "allowed_actions",
    "allowed_events",
    "handed_off",
    "handoff_reason",
    "claimed_by",
    "feedback",
    "fields",
    "missing",
}


def create(client, key: str, machine: str = "after_sales") -> dict:
    made = post(client, "/api/v1/sessions", {"machine": machine, "session_id": key})
    assert made.status_code == 201, made.content
    return made.json()


def on(client, key: str, what: str, body: dict, **headers):
    return post(client, f"/api/v1/sessions/{key}/{what}", body, **headers)


def shown(answer: dict) -> dict:
    session = answer["session"]
    assert set(session) - {"from"} == SESSION_KEYS, session
    return session


def test_every_session_answer_carries_the_session_object(client):
    made = create(client, "s1")
    assert shown(made)["state"] == "init" and made["session"]["handed_off"] is False
    moved = on(client, "s1", "transitions", {"to": "received", "expected_state": "init"}).json()
    assert (shown(moved)["state"], moved["session"]["seq"]) == ("received", 1)
    assert moved["session"]["allowed_transitions"] == ["refund_review", "human_handoff", "closed"]
    interrupted = on(client, "s1", "interrupt", {"to": "escalated", "expected_state": "received"}).json()
    assert (shown(interrupted)["state"], interrupted["session"]["seq"]) == ("escalated", 2)
    resumed = on(client, "s1", "resume", {"expected_state": "escalated"}).json()
    assert shown(resumed)["state"] == "received"
    create(client, "c1", "change_address")
    on(client, "c1", "transitions", {"to": "awaiting_intent", "expected_state": "created"})
    checked = on(client, "c1", "actions", {"type": "identify_intent"}).json()
    assert shown(checked)["allowed_actions"] == checked["allowed_actions"] == ["identify_intent"]
    reported = on(client, "s1", "anomalies", {"code": "invalid_json"}).json()
    assert (shown(reported)["seq"], reported["handed_off"]) == (3, False)
    detail = client.get("/api/v1/sessions/s1").json()
    assert shown(detail) == resumed["session"]
    decided = post(client, "/api/v1/decisions", {"point": "intent_routing", "session_id": "s1", "input": "你好"})
    assert decided.status_code == 200  # asks for a candidate: the session object all the same
    assert shown(decided.json())["state"] == "received" and "from" not in decided.json()["session"]


@pytest.mark.parametrize(
    ("what", "body", "status", "code"),
    [
        ("transitions", {"to": "received", "expected_state": "received"}, 409, "state_mismatch"),
        ("transitions", {"to": "closed", "expected_state": "init"}, 422, "illegal_transition"),
        ("actions", {"type": "refund"}, 422, "action_not_allowed"),
        ("resume", {"expected_state": "init"}, 409, "nothing_to_resume"),
    ],
)
def test_refusals_carry_the_session_object_as_it_is_after_them(client, what, body, status, code):
    create(client, "s1")
    refused = on(client, "s1", what, body)
    assert (refused.status_code, refused["Content-Type"], refused.json()["code"]) == (
        status,
        "application/problem+json",
        code,
    )
    session = shown(refused.json())
    assert (session["state"], session["seq"]) == ("init", 0)
    # The anomaly the refusal recorded is counted before the session object is built.
    anomalies = Anomaly.objects.filter(session_id="s1").count()
    assert anomalies == (1 if code in ("illegal_transition", "action_not_allowed") else 0)


def test_a_handed_off_refusal_carries_the_session_object(client):
    create(client, "h1")
    on(client, "h1", "transitions", {"to": "human_handoff", "expected_state": "init"})
    refused = on(client, "h1", "transitions", {"to": "closed", "expected_state": "human_handoff"}).json()
    assert refused["code"] == "session_handed_off"
    assert (shown(refused)["handed_off"], refused["session"]["handoff_reason"]) == (True, "agent")


def test_a_refusal_never_shows_another_agents_session(client):
    create(client, "s1")
    stranger = agent_api("stranger_bot")
    refused = on(stranger, "s1", "transitions", {"to": "received", "expected_state": "init"})
    assert (refused.status_code, refused.json()["code"]) == (404, "unknown_session")
    assert "session" not in refused.json()


def test_apply_with_a_stale_expected_state_logs_the_decision_and_moves_nothing(client):
    create(client, "s1")
    on(client, "s1", "transitions", {"to": "received", "expected_state": "init"})
    body = {
        "point": "intent_routing",
        "session_id": "s1",
        "input": "有几种颜色",
        "candidate": {"decision": "product_info", "confidence": 0.9},
        "apply": True,
        "expected_state": "init",
    }
    stale = post(client, "/api/v1/decisions", body, HTTP_IDEMPOTENCY_KEY="t1")
    assert (stale.status_code, stale.json()["code"]) == (409, "state_mismatch")
    assert (shown(stale.json())["state"], stale.json()["session"]["seq"]) == ("received", 1)
    logged = DecisionRecord.objects.get(pk=stale.json()["decision_id"])
    assert (logged.decision, logged.session_state, logged.session_move) == ("product_info", "received", None)
    assert Session.objects.get(key="s1").seq == 1
    # Not kept under the key: the retry with the right state decides (again) and moves.
    fresh = post(client, "/api/v1/decisions", {**body, "expected_state": "received"}, HTTP_IDEMPOTENCY_KEY="t2")
    assert fresh.status_code == 201, fresh.content
    assert fresh.json()["session"]["from"] == "received" and fresh.json()["session"]["seq"] == 1  # mapped to itself
    assert DecisionRecord.objects.filter(session_id="s1").count() == 2


def test_expected_state_without_apply_is_refused(client):
    create(client, "s1")
    body = {"point": "intent_routing", "session_id": "s1", "input": "你好", "expected_state": "init"}
    refused = post(client, "/api/v1/decisions", body)
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request")
    assert "apply" in refused.json()["errors"]["expected_state"][0]


def test_a_decide_that_hands_the_session_over_says_so(client):
    create(client, "s1")
    body = {"point": "intent_routing", "session_id": "s1", "candidate_raw": "no idea", "apply": True}
    answers = [post(client, "/api/v1/decisions", body).json() for _ in range(3)]
    answer = answers[-1]
    assert [a["session"]["handed_off"] for a in answers] == [False, False, True]
    session = shown(answer)
    assert (session["state"], session["handed_off"], session["handoff_reason"]) == (
        "human_handoff",
        True,
        "model_failure",
    )


def test_the_needs_candidate_answer_carries_the_prompt(client):
    asked = post(client, "/api/v1/decisions", {"point": "intent_routing", "input": "你好"})
    assert asked.status_code == 200 and asked.json()["needs_candidate"] is True
    assert asked.json()["prompt"] == {
        "outcomes": [
            "close_order",
            "general_query",
            "human_handoff",
            "intent_clarify",
            "product_info",
            "refund_request",
            "refund_review",
        ],
        "candidate_whitelist": ["close_order", "general_query", "product_info"],
        "min_confidence": 0.65,
        "feedback": [],
    }
    point = client.get("/api/v1/points/intent_routing").json()
    assert asked.json()["prompt"]["min_confidence"] == point["min_confidence"]
    decided = post(client, "/api/v1/decisions", {"point": "intent_routing", "input": "我要投诉"})
    assert "prompt" not in decided.json()


@pytest.mark.parametrize("name", ["decision", "intent"])
def test_a_candidate_may_name_its_outcome_intent(client, name):
    body = {"point": "intent_routing", "input": "有几种颜色", "candidate": {name: "product_info", "confidence": 0.9}}
    answer = post(client, "/api/v1/decisions", body)
    assert answer.status_code == 201, answer.content
    assert (answer.json()["decision"], answer.json()["candidate"]["decision"]) == ("product_info", "product_info")


def test_a_candidate_with_two_different_outcomes_is_refused(client):
    both = {"decision": "product_info", "intent": "close_order", "confidence": 0.9}
    refused = post(client, "/api/v1/decisions", {"point": "intent_routing", "candidate": both})
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request")
    assert "intent" in refused.json()["errors"]["candidate"]
    same = {"decision": "product_info", "intent": "product_info", "confidence": 0.9}
    assert post(client, "/api/v1/decisions", {"point": "intent_routing", "candidate": same}).status_code == 201
    neither = post(client, "/api/v1/decisions", {"point": "intent_routing", "candidate": {"confidence": 0.9}})
    assert neither.status_code == 422


@pytest.mark.parametrize("apply", [False, True])
@pytest.mark.parametrize("key", ["", "k1"])
def test_a_decide_naming_an_unknown_session_is_refused(client, apply, key):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    body = {"point": "intent_routing", "session_id": "no-such", "input": "我要投诉", "apply": apply}
    for _ in range(2):  # a retry with the key is refused the same way: nothing was stored
        refused = post(client, "/api/v1/decisions", body, **headers)
        assert (refused.status_code, refused.json()["code"]) == (404, "unknown_session")
    assert not DecisionRecord.objects.exists()


def test_a_rule_driven_fallback_is_not_a_model_failure(client):
    """The issue's scenario: 我想退款 with apply from init, three times. A rule decided each time (the
    model was never asked): the fallbacks are recorded, never counted, and nobody is handed the session."""
    create(client, "s1")
    body = {"point": "intent_routing", "session_id": "s1", "input": "我想退款", "apply": True}
    for _ in range(3):
        answer = post(client, "/api/v1/decisions", body).json()
        assert answer["ruled_by"] == "hard_rule"
    assert answer["session"]["handed_off"] is False and answer["session"]["feedback"] == []
    session = Session.objects.get(key="s1")
    assert (session.state, session.anomaly_count) == ("intent_clarify", 0)
    assert set(Anomaly.objects.filter(session_id="s1").values_list("code", flat=True)) == {"rule_move_not_allowed"}
    assert not Transition.objects.filter(session=session, kind="model_failure").exists()


def test_a_candidates_refused_mapping_still_counts(client):
    create(client, "s1")
    on(client, "s1", "transitions", {"to": "received", "expected_state": "init"})
    on(client, "s1", "transitions", {"to": "refund_review", "expected_state": "received"})
    body = {
        "point": "intent_routing",
        "session_id": "s1",
        "input": "有几种颜色",
        "candidate": {"decision": "product_info", "confidence": 0.9},
        "apply": True,
    }
    post(client, "/api/v1/decisions", body)
    anomaly = Anomaly.objects.get(session_id="s1")
    assert anomaly.code == "decision_move_not_allowed"
    assert Session.objects.get(key="s1").anomaly_count == 1


# -- one Idempotency-Key scope per agent --------------------------------------------------------------


def test_one_key_scope_for_every_write_of_an_agent(client):
    create(client, "s1")
    create(client, "s2")
    moved = on(client, "s1", "transitions", {"to": "received", "expected_state": "init"}, HTTP_IDEMPOTENCY_KEY="k")
    assert moved.status_code == 200
    # The same key: another session, another kind of write, a decision — all refused.
    for refused in (
        on(client, "s2", "transitions", {"to": "received", "expected_state": "init"}, HTTP_IDEMPOTENCY_KEY="k"),
        on(client, "s1", "interrupt", {"to": "escalated", "expected_state": "received"}, HTTP_IDEMPOTENCY_KEY="k"),
        on(client, "s1", "anomalies", {"code": "invalid_json"}, HTTP_IDEMPOTENCY_KEY="k"),
        post(client, "/api/v1/decisions", {"point": "intent_routing", "input": "我要投诉"}, HTTP_IDEMPOTENCY_KEY="k"),
    ):
        assert (refused.status_code, refused.json()["code"]) == (409, "idempotency_conflict")
    # A decision's key is refused for a move as well.
    post(client, "/api/v1/decisions", {"point": "intent_routing", "input": "我要投诉"}, HTTP_IDEMPOTENCY_KEY="d")
    refused = on(client, "s2", "transitions", {"to": "received", "expected_state": "init"}, HTTP_IDEMPOTENCY_KEY="d")
    assert (refused.status_code, refused.json()["code"]) == (409, "idempotency_conflict")
    # Another agent's keys are its own.
    other = agent_api("other_bot")
    create(other, "s1")
    again = on(other, "s1", "transitions", {"to": "received", "expected_state": "init"}, HTTP_IDEMPOTENCY_KEY="k")
    assert again.status_code == 200


def test_interrupt_resume_and_anomaly_reports_replay_under_their_key(client):
    create(client, "s1")
    body = {"to": "escalated", "expected_state": "init"}
    first = on(client, "s1", "interrupt", body, HTTP_IDEMPOTENCY_KEY="i1")
    again = on(client, "s1", "interrupt", body, HTTP_IDEMPOTENCY_KEY="i1")
    assert first.json() == again.json() and Session.objects.get(key="s1").seq == 1
    back = on(client, "s1", "resume", {"expected_state": "escalated"}, HTTP_IDEMPOTENCY_KEY="r1")
    retried = on(client, "s1", "resume", {"expected_state": "escalated"}, HTTP_IDEMPOTENCY_KEY="r1")
    assert (back.json()["seq"], retried.json()["seq"], retried.json()["session"]["state"]) == (2, 2, "init")
    for _ in range(2):
        reported = on(client, "s1", "anomalies", {"code": "invalid_json"}, HTTP_IDEMPOTENCY_KEY="a1")
        assert reported.status_code == 201
    assert Anomaly.objects.filter(session_id="s1").count() == 1
    changed = on(client, "s1", "anomalies", {"code": "schema_violation"}, HTTP_IDEMPOTENCY_KEY="a1")
    assert (changed.status_code, changed.json()["code"]) == (409, "idempotency_conflict")


def test_a_replayed_decision_shows_the_move_as_made_and_the_session_now(client):
    create(client, "s1")
    body = {"point": "intent_routing", "session_id": "s1", "input": "我要投诉", "apply": True}
    first = post(client, "/api/v1/decisions", body, HTTP_IDEMPOTENCY_KEY="d1").json()
    again = post(client, "/api/v1/decisions", body, HTTP_IDEMPOTENCY_KEY="d1").json()
    assert again["id"] == first["id"] and again["session"] == first["session"]
    assert (first["session"]["from"], first["session"]["state"], first["session"]["handed_off"]) == (
        "init",
        "human_handoff",
        True,
    )

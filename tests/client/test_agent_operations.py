"""Every agent operation of the client against a live server: an answer, and at least one refusal
raised as its own exception class with the problem's members."""

from __future__ import annotations

import arbiter_client as ac
import pytest
from arbiter_client import Arbiter
from arbiter_client._transport import Call


def test_points_and_one_point(bot: Arbiter) -> None:
    listed = bot.points()
    assert [p["key"] for p in listed["points"]] == ["intent_routing", "refund_approval"]
    point = bot.point("intent_routing")
    assert (point["min_confidence"], point["when_no_candidate"]) == (0.65, "ask")
    with pytest.raises(ac.UnknownPoint) as refused:
        bot.point("no_such_point")
    assert (refused.value.status, refused.value.code) == (404, "unknown_point")
    assert isinstance(refused.value, ac.NotFound)


def test_decide_read_and_replay(bot: Arbiter) -> None:
    ruled = bot.decide("intent_routing", input="我要投诉你们")
    assert (ruled["decision"], ruled["ruled_by"], ruled["needs_candidate"]) == ("human_handoff", "hard_rule", False)
    asked = bot.decide("intent_routing", input="耳机有杂音")
    assert asked["needs_candidate"] is True and asked["id"] is None
    judged = bot.decide(
        "intent_routing", input="耳机有杂音", candidate={"decision": "general_query", "confidence": 0.9, "reason": "r"}
    )
    assert (judged["decision"], judged["ruled_by"]) == ("general_query", "llm_candidate")

    record = bot.decision(judged["id"])
    assert record["id"] == judged["id"]
    replayed = bot.replay(judged["id"])
    assert replayed["identical"] is True
    missing = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(ac.NotFound):
        bot.decision(missing)
    with pytest.raises(ac.NotFound):
        bot.replay(missing)

    with pytest.raises(ac.InvalidRequest) as refused:
        bot.decide("intent_routing", candidate={"decision": "general_query", "confidence": 2})
    assert "candidate" in refused.value.errors
    with pytest.raises(ac.UnknownPoint):
        bot.decide("no_such_point")


def test_an_idempotency_key_returns_the_decision_already_made_and_refuses_another_body(bot: Arbiter) -> None:
    first = bot.decide("intent_routing", input="我要投诉", idempotency_key="turn-1")
    again = bot.decide("intent_routing", input="我要投诉", idempotency_key="turn-1")
    assert again["id"] == first["id"]
    with pytest.raises(ac.IdempotencyConflict) as refused:
        bot.decide("intent_routing", input="别的话", idempotency_key="turn-1")
    assert refused.value.status == 409


def test_point_not_allowed_and_not_authenticated(live) -> None:
    narrow = live.agent("narrow_bot", ("refund_approval",))
    with pytest.raises(ac.PointNotAllowed):
        narrow.decide("intent_routing", input="hi")
    stranger = live.client("arb_not-a-real-token")
    with pytest.raises(ac.NotAuthenticated) as refused:
        stranger.points()
    assert refused.value.status == 401


def test_session_create_read_move_and_their_refusals(bot: Arbiter) -> None:
    created = bot.session_create("after_sales", session_id="c-1", context={"order_id": "1"})
    assert (created["state"], created["seq"]) == ("init", 0)
    with pytest.raises(ac.SessionExists):
        bot.session_create("after_sales", session_id="c-1")
    with pytest.raises(ac.UnknownMachine):
        bot.session_create("no_machine")
    assert bot.session_get("c-1")["context"] == {"order_id": "1"}
    with pytest.raises(ac.UnknownSession):
        bot.session_get("nobody")

    moved = bot.session_move("c-1", "received", expected_state="init")
    assert {k: moved[k] for k in ("from", "state", "seq")} == {"from": "init", "state": "received", "seq": 1}
    assert (moved["session"]["state"], moved["session"]["seq"], moved["session"]["handed_off"]) == (
        "received",
        1,
        False,
    )
    with pytest.raises(ac.StateMismatch) as stale:
        bot.session_move("c-1", "closed", expected_state="init")
    assert (stale.value.state, stale.value.seq) == ("received", 1)
    # The refusal carries the session object: where it is and what it may do next, with no extra read.
    assert stale.value.problem["session"]["allowed_transitions"] == ["refund_review", "human_handoff", "closed"]
    with pytest.raises(ac.IllegalTransition) as illegal:
        bot.session_move("c-1", "init", expected_state="received")
    assert illegal.value.allowed_transitions == ["refund_review", "human_handoff", "closed"]
    assert illegal.value.handed_off is False


def test_actions_interrupts_resumes_and_anomalies(bot: Arbiter) -> None:
    bot.session_create("change_address", session_id="a-1")
    bot.session_move("a-1", "awaiting_intent", expected_state="created")
    assert bot.session_action("a-1", "identify_intent")["allowed"] is True
    with pytest.raises(ac.ActionNotAllowed) as refused:
        bot.session_action("a-1", "change_address", {"address": "x"})
    assert refused.value.problem["allowed_actions"] == ["identify_intent"]

    with pytest.raises(ac.NothingToResume):
        bot.session_resume("a-1", expected_state="awaiting_intent")
    aside = bot.session_interrupt("a-1", "collecting_params", expected_state="awaiting_intent")
    assert aside["state"] == "collecting_params"
    back = bot.session_resume("a-1", expected_state="collecting_params")
    assert back["state"] == "awaiting_intent"
    with pytest.raises(ac.StateMismatch):
        bot.session_interrupt("a-1", "collecting_params", expected_state="created")

    recorded = bot.session_anomaly("a-1", "tool_error", detail="the address service timed out")
    assert "tool_error" in recorded["anomalies"]["latest"] and recorded["handed_off"] is False
    with pytest.raises(ac.UnknownSession):
        bot.session_anomaly("nobody", "tool_error")


def test_the_openapi_document_is_served_as_text(bot: Arbiter) -> None:
    text = bot.openapi_document()
    assert text.startswith("openapi: 3.1.0")
    with pytest.raises(ac.MethodNotAllowed) as refused:
        bot.send(Call("POST", "/api/v1/openapi.yaml", json={}))
    assert refused.value.status == 405


def test_a_code_the_client_does_not_know_raises_arbiter_error_and_a_page_that_is_no_problem_too() -> None:
    problem = {"type": "t", "title": "New", "status": 409, "detail": "d", "code": "brand_new_code", "state": "x"}
    error = ac.error_from_problem(409, problem)
    assert type(error) is ac.ArbiterError
    assert (error.code, error.status, error.problem, error.state) == ("brand_new_code", 409, problem, "x")
    page = ac.error_from_problem(502, "<html>Bad gateway</html>")
    assert isinstance(page, ac.ArbiterError) and page.code == "unexpected_response"

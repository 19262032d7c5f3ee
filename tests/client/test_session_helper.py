"""The session helper against a live server: state and seq taken from every answer and refusal, so a
runtime needs no read to know where its session is; ``follow`` through a state map, re-deciding once
when another worker moved the session first."""

from __future__ import annotations

import arbiter_client as ac
import pytest

# intent_routing's map in demo/after_sales.yaml (GET /points serves none yet: see docs/client.md).
STATE_MAP = {
    "close_order": "closed",
    "refund_request": "refund_review",
    "general_query": "received",
    "human_handoff": "human_handoff",
    "product_info": "received",
    "refund_review": "refund_review",
    "intent_clarify": "intent_clarify",
}


def test_the_session_follows_every_answer_without_reading_it(bot) -> None:
    s = bot.session(machine="after_sales", session_id="h-1", context={"order_id": "1"})
    assert (s.state, s.seq, s.allowed_transitions) == ("init", 0, ["intent_clarify", "received", "human_handoff"])
    sent = bot.counter.requests
    asked = s.decide("intent_routing", input="耳机左边没声音")
    assert asked["needs_candidate"] is True and (s.state, s.seq) == ("init", 0)
    d = s.decide("intent_routing", input="耳机左边没声音", candidate={"decision": "general_query", "confidence": 0.9})
    assert (d["decision"], s.state, s.seq, s.feedback) == ("general_query", "received", 1, [])
    s.move("refund_review", reason="the customer asks for money back")
    assert (s.state, s.seq) == ("refund_review", 2)
    with pytest.raises(ac.IllegalTransition) as illegal:
        s.move("init")
    assert (s.state, s.seq, s.allowed_transitions) == ("refund_review", 2, illegal.value.allowed_transitions)
    # No reads: every position came with an answer.
    assert bot.counter.requests - sent == 4

    # Another worker moves the session: the next move is refused and the helper learns where it is.
    bot.session_move("h-1", "human_handoff", expected_state="refund_review")
    with pytest.raises(ac.StateMismatch):
        s.move("closed")
    assert (s.state, s.seq) == ("human_handoff", 3)
    assert s.refresh()["handoff_reason"] is not None and s.handed_off is True


def test_a_decide_with_apply_sends_the_state_it_believes_and_a_stale_one_is_refused(bot) -> None:
    s = bot.session(machine="after_sales", session_id="h-5")
    other = bot.session(session_id="h-5")
    s.decide("intent_routing", input="我想问问耳机续航", candidate={"decision": "product_info", "confidence": 0.9})
    assert (s.state, s.seq) == ("received", 1)
    sent = bot.counter.requests
    s.decide("intent_routing", input="那我要退款吧")
    assert (s.state, s.seq) == ("refund_review", 2)
    assert bot.counter.requests - sent == 1
    # The other worker still believes "init": its decide with apply is refused (state_mismatch), nothing
    # moves, and the helper learns where the session is from the refusal's session object.
    with pytest.raises(ac.StateMismatch) as stale:
        other.decide("intent_routing", input="那我要退款吧")
    assert stale.value.problem["decision_id"]
    assert (other.state, other.seq) == ("refund_review", 2)
    assert (s.state, s.seq) == ("refund_review", 2)


def test_joining_an_existing_session_and_the_checks(bot) -> None:
    bot.session_create("change_address", session_id="h-2")
    s = bot.session(session_id="h-2")
    assert (s.machine, s.state) == ("change_address", "created")
    s.move("awaiting_intent")
    assert s.check_action("identify_intent")["allowed"] is True and s.allowed_actions == ["identify_intent"]
    with pytest.raises(ac.ActionNotAllowed):
        s.check_action("change_address")
    recorded = s.report_anomaly("tool_error", detail="the address service timed out")
    assert (s.seq, recorded["seq"]) == (1, 1)
    s.interrupt("collecting_params", reason="a question in between")
    assert (s.state, s.seq) == ("collecting_params", 2)
    s.resume()
    assert (s.state, s.seq) == ("awaiting_intent", 3)
    with pytest.raises(ValueError, match="machine= to start"):
        bot.session()


def test_follow_moves_through_the_map_and_decides_again_once_on_a_mismatch(bot) -> None:
    s = bot.session(machine="after_sales", session_id="h-3")
    other = bot.session(session_id="h-3")  # a second worker on the same conversation
    d = s.decide("intent_routing", input="我要投诉", apply=False)
    assert d["decision"] == "human_handoff" and s.seq == 0
    other.move("received")
    sent = bot.counter.requests
    moved = s.follow(d, state_map=STATE_MAP)
    assert moved is not None and (moved["from"], moved["state"]) == ("received", "human_handoff")
    assert (s.state, s.seq) == ("human_handoff", 2)
    assert bot.counter.requests - sent == 3  # the refused move, the decide again, the move

    applied = bot.session(machine="after_sales", session_id="h-4")
    done = applied.decide("intent_routing", input="我要投诉")
    assert applied.follow(done) is None and applied.state == "human_handoff"
    with pytest.raises(ValueError, match="needs a candidate"):
        applied.follow(applied.decide("intent_routing", input="随便问问", apply=False), state_map=STATE_MAP)


def test_the_async_session_tracks_and_follows_the_same_way(live) -> None:
    import asyncio

    from agents.runtimes.services import agent_create

    _, token = agent_create(name="async_bot", point_keys=["intent_routing"], actor=None, reason="client test")

    async def conversation() -> list[tuple[str, int]]:
        seen = []
        async with ac.AsyncArbiter(live.url, token) as arbiter:
            s = await arbiter.session(machine="after_sales", session_id="as-1")
            other = await arbiter.session(session_id="as-1")
            seen.append((s.state, s.seq))
            d = await s.decide("intent_routing", input="我要投诉", apply=False)
            await other.move("received")
            await s.follow(d, state_map=STATE_MAP)  # refused as stale, decided again, moved
            seen.append((s.state, s.seq))
            with pytest.raises(ac.SessionHandedOff) as refused:
                await s.move("received")  # a person owns it now
            assert isinstance(refused.value, ac.SessionRefused) and refused.value.state == "human_handoff"
            seen.append((s.state, s.seq))
            await s.report_anomaly("tool_error")
            seen.append(((await s.refresh())["state"], s.seq))
        return seen

    assert asyncio.run(conversation()) == [
        ("init", 0),
        ("human_handoff", 2),
        ("human_handoff", 2),
        ("human_handoff", 2),
    ]

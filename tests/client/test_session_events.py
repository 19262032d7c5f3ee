"""``Session.event`` against a live server: an event moves the session and the helper follows it; a
refused event (not allowed here, a guard, a refused field value) is raised with where the session is,
and the state it tracks stays right; ``updates`` set fields with the event's move. The server's
configuration is this module's own: seed 003's address change with events."""

from __future__ import annotations

import asyncio

import arbiter_client as ac
import pytest

from agents.runtimes.services import agent_create


@pytest.fixture
def live_config() -> str:
    return r"""
version: 1
thresholds: []
keyword_lists: []
points:
  - key: params_check
    outcomes: [complete, incomplete]
    default_outcome: complete
    when_no_candidate: default
machines:
  - key: address_events
    states: [collecting_params, executing, completed, human_handoff]
    initial: collecting_params
    handoff: human_handoff
    terminal: [completed]
    transitions:
      collecting_params: [executing, human_handoff]
      executing: [completed, collecting_params, human_handoff]
      human_handoff: [completed]
    fields:
      - name: receiver_phone
        type: string
        pattern: '^1[3-9]\d{9}$'
        normalize: [digits]
      - name: new_address
        type: string
        min_length: 2
    events:
      - name: params_collected
        from: [collecting_params]
        to: executing
        guard:
          requires_decision: {point: params_check, outcomes: [complete]}
      - name: clarification_required
        from: [executing]
        to: collecting_params
"""


def test_events_move_the_session_and_refusals_say_where_it_is(live) -> None:
    bot = live.agent(points=("params_check",))
    s = bot.session(machine="address_events", session_id="ev-1")
    with pytest.raises(ac.EventNotAllowed) as refused:
        s.event("clarification_required")
    assert refused.value.problem["allowed_events"] == ["params_collected"]
    with pytest.raises(ac.GuardFailed) as guarded:
        s.event("params_collected", proposed_by="model")
    assert guarded.value.problem["guard"] == "requires_decision"
    assert (s.state, s.seq) == ("collecting_params", 0)
    decided = s.decide("params_check", input="all there", apply=False)
    moved = s.event("params_collected", decision_id=decided["id"], idempotency_key="ev-1-turn-2")
    assert (moved["from"], moved["to"], moved["seq"]) == ("collecting_params", "executing", 1)
    assert (s.state, s.seq) == ("executing", 1)
    # Seed 003: the business call failed; back to collecting, and the helper knows it without a read.
    s.event("clarification_required")
    assert (s.state, s.seq) == ("collecting_params", 2)


def test_an_event_carries_field_updates_with_its_move(live) -> None:
    bot = live.agent(points=("params_check",))
    s = bot.session(machine="address_events", session_id="ev-2")
    assert s.allowed_events == ["params_collected"]
    decided = s.decide("params_check", input="all there", apply=False)
    with pytest.raises(ac.InvalidFields) as refused:
        s.event("params_collected", decision_id=decided["id"], updates={"receiver_phone": "abc"})
    assert list(refused.value.problem["errors"]) == ["receiver_phone"]
    assert (s.state, s.seq) == ("collecting_params", 0)
    moved = s.event(
        "params_collected",
        decision_id=decided["id"],
        updates={"receiver_phone": "138-0013-8000", "new_address": "火星市"},
        idempotency_key="ev-2-turn-1",
    )
    assert (moved["to"], moved["normalised"]) == ("executing", {"receiver_phone": ["digits"]})
    assert moved["session"]["fields"] == {"receiver_phone": "13800138000", "new_address": "火星市"}
    assert (s.state, s.seq, s.allowed_events) == ("executing", 1, ["clarification_required"])
    # Seed 003: the address does not exist; back to collecting with it cleared, in one move.
    back = s.event("clarification_required", updates={"new_address": None})
    assert back["session"]["fields"] == {"receiver_phone": "13800138000"}
    assert (s.state, s.seq, s.allowed_events) == ("collecting_params", 2, ["params_collected"])


def test_the_async_session_sends_updates_with_an_event(live) -> None:
    _, token = agent_create(name="async_events", point_keys=["params_check"], actor=None, reason="client test")

    async def conversation() -> tuple[str, int, dict]:
        async with ac.AsyncArbiter(live.url, token) as arbiter:
            s = await arbiter.session(machine="address_events", session_id="ev-3")
            decided = await s.decide("params_check", input="all there", apply=False)
            moved = await s.event("params_collected", decision_id=decided["id"], updates={"new_address": "杭州市"})
            return s.state, s.seq, moved["session"]["fields"]

    assert asyncio.run(conversation()) == ("executing", 1, {"new_address": "杭州市"})

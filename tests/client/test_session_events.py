"""``Session.event`` against a live server: an event moves the session and the helper follows it; a
refused event (not allowed here, a guard) is raised with where the session is, and the state it tracks
stays right. The server's configuration is this module's own: seed 003's address change with events."""

from __future__ import annotations

import arbiter_client as ac
import pytest


@pytest.fixture
def live_config() -> str:
    return """
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

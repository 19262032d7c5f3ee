"""Sampling by turn (agents.traces.sampling): a failed turn kept whole, the rest by a hash of the turn."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents.traces.sampling import sample, turn_kept

turns = st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=12)
ratios = st.floats(min_value=0, max_value=1)


def llm(turn: str | None, status: str = "ok") -> dict:
    event = {"type": "llm_call", "status": status, "attributes": {"gen_ai.request.model": "m"}}
    return {**event, "turn_id": turn} if turn else event


@given(turn=turns, ratio=ratios, size=st.integers(min_value=1, max_value=5), at=st.integers(min_value=0, max_value=4))
def test_a_turn_with_an_error_is_kept_whole_at_any_ratio(turn, ratio, size, at):
    events = [llm(turn) for _ in range(size)]
    events[at % size] = llm(turn, "error")
    result = sample(session_key="1:s", events=events, ratio=ratio)
    assert (len(result.kept), result.dropped, result.failed_turns) == (size, 0, 1)


@given(turn=turns)
def test_error_handled_fails_its_turn(turn):
    events = [llm(turn), {"type": "error_handled", "turn_id": turn, "error_code": "X"}]
    assert len(sample(session_key="1:s", events=events, ratio=0).kept) == 2


@given(turn=turns, ratio=ratios)
def test_a_turn_is_kept_or_dropped_whole_and_the_same_way_every_time(turn, ratio):
    events = [llm(turn), llm(turn), llm(turn)]
    first = sample(session_key="1:s", events=events, ratio=ratio)
    again = sample(session_key="1:s", events=events, ratio=ratio)
    assert len(first.kept) in (0, 3) and first.kept == again.kept
    assert len(first.kept) == 3 * turn_kept(session_key="1:s", turn=f"t:{turn}", ratio=ratio)


@given(turn=turns, low=ratios, high=ratios)
def test_a_turn_kept_at_a_ratio_is_kept_at_every_higher_ratio(turn, low, high):
    low, high = sorted((low, high))
    if turn_kept(session_key="1:s", turn=turn, ratio=low):
        assert turn_kept(session_key="1:s", turn=turn, ratio=high)


def test_the_ratio_is_the_share_of_turns_kept():
    kept = sum(turn_kept(session_key="7:s", turn=f"turn-{i}", ratio=0.1) for i in range(20_000))
    assert 1_800 < kept < 2_200  # 10% of 20,000, within about five standard deviations


def test_the_edges_keep_all_or_none():
    events = [llm(f"t{i}") for i in range(50)]
    assert len(sample(session_key="1:s", events=events, ratio=1).kept) == 50
    assert sample(session_key="1:s", events=events, ratio=0).dropped == 50


def test_events_without_a_turn_are_each_a_turn():
    events = [llm(None, "error"), llm(None), {**llm(None), "event_id": "e-1"}]
    result = sample(session_key="1:s", events=events, ratio=0)
    assert (len(result.kept), result.failed_turns) == (1, 1)
    assert result.kept[0]["status"] == "error"

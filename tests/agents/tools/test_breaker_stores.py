"""Each tool's breaker and concurrency limit, on both stores: the database row and the Redis scripts.

Time is the test's: the database store reads an injected clock, the Redis scripts take the time as an
argument instead of ``TIME`` (the same seam, nothing else changes). Redis runs when this run has one
(``CELERY_BROKER_URL=redis://…``). The Hypothesis test runs random steps on each store beside the pure
state machine (``agents.tools.breaker_machine``) and asks for the same answers and the same state.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.tools import breaker_machine as machine
from agents.tools.breaker_machine import CIRCUIT_OPEN, CLOSED, HALF_OPEN, OPEN, TOOL_CONCURRENCY, Breaker
from agents.tools.breaker_redis import RedisStore
from agents.tools.breaker_store import DatabaseStore
from agents.tools.models import ToolBreaker
from tests.support.breakers import BREAKER, HAS_REDIS, MsClock, make_store, tool_name
from tests.support.serve import free_port

# Redis only when this run has one (CI's PostgreSQL run does): then both stores run every test.
KINDS = ["database", "redis"] if HAS_REDIS else ["database"]
B = Breaker.of(BREAKER)
assert B is not None


@pytest.fixture(params=KINDS)
def kind(request, db):
    return request.param


@pytest.fixture
def clock():
    return MsClock()


@pytest.fixture
def store(kind, clock):
    return make_store(kind, clock)


def enter(store, tool, lease="1:1", *, limit=None, deadline_ms=None, breaker=B):
    return store.enter(tool, breaker=breaker, max_concurrent=limit, lease=lease, deadline_ms=deadline_ms or 10**13)


def fail(store, tool, n=1):
    for _ in range(n):
        outcome = store.record(tool, breaker=B, ok=False)
    return outcome


def test_threshold_failures_within_the_window_open_it(store, clock):
    tool = tool_name()
    assert fail(store, tool, 2).after == CLOSED
    assert enter(store, tool).refused == ""
    outcome = fail(store, tool)
    assert (outcome.before, outcome.after) == (CLOSED, OPEN)
    refused = enter(store, tool)
    assert refused.refused == CIRCUIT_OPEN and refused.retry_after_ms == 5_000
    clock.now += 1_234
    assert enter(store, tool).retry_after_ms == 5_000 - 1_234
    assert store.snapshot(tool, breaker=B).state == OPEN


def test_failures_older_than_the_window_do_not_count(store, clock):
    tool = tool_name()
    fail(store, tool, 2)
    clock.now += 10_000  # the two are exactly window_s old now: out of it
    assert fail(store, tool).after == CLOSED
    assert store.snapshot(tool, breaker=B).failures == 1
    clock.now += 9_999
    assert fail(store, tool).after == CLOSED
    assert fail(store, tool).after == OPEN


def test_successes_do_not_reset_the_count(store):
    tool = tool_name()
    fail(store, tool, 2)
    store.record(tool, breaker=B, ok=True)
    assert fail(store, tool).after == OPEN


def test_half_open_lets_trial_calls_through_and_their_successes_close_it(store, clock):
    tool = tool_name()
    fail(store, tool, 3)
    clock.now += 5_000
    assert store.snapshot(tool, breaker=B).state == HALF_OPEN  # read, not written
    first = enter(store, tool, "1:1")
    assert (first.before, first.after, first.refused) == (OPEN, HALF_OPEN, "")
    assert enter(store, tool, "2:1").after == HALF_OPEN
    assert enter(store, tool, "3:1").refused == CIRCUIT_OPEN  # two trials only
    assert store.record(tool, breaker=B, ok=True).after == HALF_OPEN
    closed = store.record(tool, breaker=B, ok=True)
    assert (closed.before, closed.after) == (HALF_OPEN, CLOSED)
    assert enter(store, tool, "4:1").refused == ""
    assert store.snapshot(tool, breaker=B).failures == 0


def test_a_trial_failure_opens_it_again(store, clock):
    tool = tool_name()
    fail(store, tool, 3)
    clock.now += 5_000
    enter(store, tool)
    store.record(tool, breaker=B, ok=True)
    again = fail(store, tool)
    assert (again.before, again.after) == (HALF_OPEN, OPEN)
    assert enter(store, tool).retry_after_ms == 5_000


def test_trials_past_their_deadline_without_a_result_open_it_again(store, clock):
    tool = tool_name()
    fail(store, tool, 3)
    clock.now += 5_000
    enter(store, tool, "1:1", deadline_ms=clock.now + 1_000)
    enter(store, tool, "2:1", deadline_ms=clock.now + 2_000)
    waiting = enter(store, tool, "3:1")
    assert waiting.refused == CIRCUIT_OPEN and waiting.retry_after_ms == 2_000
    clock.now += 2_001
    reopened = enter(store, tool, "4:1")
    assert (reopened.refused, reopened.after) == (CIRCUIT_OPEN, OPEN)


def test_a_breaker_opened_by_hand_stays_open_until_a_person_closes_it(store, clock):
    tool = tool_name()
    assert store.force(tool, opened=True).after == OPEN
    clock.now += 3_600_000
    assert enter(store, tool).refused == CIRCUIT_OPEN
    assert store.record(tool, breaker=B, ok=True).after == OPEN
    assert enter(store, tool, breaker=None, limit=5).refused == CIRCUIT_OPEN
    snapshot = store.snapshot(tool, breaker=B)
    assert (snapshot.state, snapshot.forced, snapshot.retry_after_ms) == (OPEN, True, None)
    assert store.force(tool, opened=False).after == CLOSED
    assert enter(store, tool).refused == ""


def test_closing_by_hand_forgets_the_failures(store):
    tool = tool_name()
    fail(store, tool, 2)
    store.force(tool, opened=False)
    assert store.snapshot(tool, breaker=B).failures == 0
    assert fail(store, tool, 2).after == CLOSED


def test_the_concurrency_limit_counts_live_leases(store, clock):
    tool = tool_name()
    assert enter(store, tool, "1:1", limit=2, deadline_ms=clock.now + 1_000).refused == ""
    assert enter(store, tool, "2:1", limit=2, deadline_ms=clock.now + 3_000).refused == ""
    refused = enter(store, tool, "3:1", limit=2)
    assert refused.refused == TOOL_CONCURRENCY and refused.retry_after_ms == 1_000
    assert enter(store, tool, "2:1", limit=2).refused == ""  # the same attempt again holds its slot
    store.leave(tool, lease="2:1")
    assert enter(store, tool, "3:1", limit=2, deadline_ms=clock.now + 5_000).refused == ""
    assert enter(store, tool, "4:1", limit=2).refused == TOOL_CONCURRENCY
    clock.now += 1_000  # 1:1's deadline has passed: its slot is free
    assert enter(store, tool, "4:1", limit=2).refused == ""
    assert store.snapshot(tool, breaker=None).in_flight == 2


def test_a_refusal_for_concurrency_does_not_use_up_a_trial(store, clock):
    tool = tool_name()
    enter(store, tool, "0:1", limit=1, breaker=None)
    fail(store, tool, 3)
    clock.now += 5_000
    assert enter(store, tool, "1:1", limit=1).refused == TOOL_CONCURRENCY
    store.leave(tool, lease="0:1")
    assert enter(store, tool, "1:1", limit=2).refused == ""
    assert enter(store, tool, "2:1", limit=2).refused == ""
    assert enter(store, tool, "3:1", limit=3).refused == CIRCUIT_OPEN


def test_an_ignored_trial_gives_its_slot_back_and_counts_for_nothing(store, clock):
    tool = tool_name()
    fail(store, tool, 3)
    clock.now += 5_000
    assert enter(store, tool, "1:1").refused == "" and enter(store, tool, "2:1").refused == ""
    assert enter(store, tool, "3:1").refused == CIRCUIT_OPEN
    ignored = store.record(tool, breaker=B, ok=None)
    assert (ignored.before, ignored.after) == (HALF_OPEN, HALF_OPEN)
    assert enter(store, tool, "3:1").refused == ""  # the slot given back, once
    assert enter(store, tool, "4:1").refused == CIRCUIT_OPEN
    store.record(tool, breaker=B, ok=True)
    assert store.record(tool, breaker=B, ok=True).after == CLOSED  # two successes, as if it never was


def test_an_ignored_result_never_gives_more_slots_than_trial_calls(store, clock):
    tool = tool_name()
    fail(store, tool, 3)
    clock.now += 5_000
    enter(store, tool, "1:1")
    store.record(tool, breaker=B, ok=True)
    for _ in range(3):  # stray results (attempts of before it opened) cannot add slots
        store.record(tool, breaker=B, ok=None)
    assert enter(store, tool, "2:1").refused == ""
    assert enter(store, tool, "3:1").refused == CIRCUIT_OPEN


def test_an_ignored_result_while_closed_changes_nothing(store):
    tool = tool_name()
    fail(store, tool, 2)
    for _ in range(5):
        assert store.record(tool, breaker=B, ok=None).after == CLOSED
    assert store.snapshot(tool, breaker=B).failures == 2


ENTER = st.tuples(st.just("enter"), st.integers(0, 5), st.integers(1, 8_000))
STEPS = st.lists(
    st.one_of(
        ENTER,
        ENTER,  # calls come more often than anything else
        st.tuples(st.just("record"), st.booleans() | st.none()),  # None: an ignored trial
        st.tuples(st.just("leave"), st.integers(0, 5)),
        st.tuples(st.just("force"), st.booleans()).filter(lambda step: step[1] is False) | st.just(("force", True)),
        st.tuples(st.just("wait"), st.integers(0, 6_000)),
    ),
    max_size=40,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.sampled_from([None, 1, 2, 3]), steps=STEPS)
# Random lists rarely hold these sequences (a full limit; a threshold of failures, then the trials):
@example(limit=1, steps=[("enter", 0, 5000), ("enter", 1, 5000), ("leave", 0), ("enter", 1, 5000)])
@example(limit=None, steps=[*[("record", False)] * 3, ("enter", 0, 5000), ("wait", 5000), *[("enter", 1, 9)] * 3])
@example(
    limit=None,
    steps=[
        *[("record", False)] * 3,
        ("wait", 5000),
        ("enter", 0, 9),
        ("enter", 1, 9),
        ("record", None),
        ("enter", 2, 9),
    ],
)
def test_each_store_answers_as_the_state_machine(kind, limit, steps):
    clock = MsClock()
    store, tool, model = make_store(kind, clock), tool_name("h"), machine.State()
    for step in steps:
        if step[0] == "enter":
            _, n, ttl = step
            args = {"max_concurrent": limit, "lease": f"{n}:1", "deadline_ms": clock.now + ttl}
            expected = machine.enter(model, B, now=clock.now, **args)
            assert store.enter(tool, breaker=B, **args) == expected, step
        elif step[0] == "record":
            expected = machine.record(model, B, ok=step[1], now=clock.now)
            assert store.record(tool, breaker=B, ok=step[1]) == expected, step
        elif step[0] == "leave":
            machine.leave(model, lease=f"{step[1]}:1")
            store.leave(tool, lease=f"{step[1]}:1")
        elif step[0] == "force":
            assert store.force(tool, opened=step[1]) == machine.force(model, opened=step[1], now=clock.now)
        else:
            clock.now += step[1]
        seen = store.snapshot(tool, breaker=B)
        assert (seen.state, seen.forced, seen.failures, seen.in_flight) == (
            _effective(model, clock.now),
            model.forced,
            machine.failures_in_window(model, B, clock.now),
            machine.leases_alive(model, clock.now),
        )


def _effective(model: machine.State, now: int) -> str:
    copy = machine.State(model.state, model.opened_at_ms, model.trials_left, list(model.marks), {}, model.forced)
    machine.advance(copy, B, now)
    return copy.state


def test_an_unreachable_redis_leaves_the_breakers_to_the_database_and_says_so_once(db, caplog):
    clock, monotonic = MsClock(), [0.0]
    away = RedisStore(
        f"redis://127.0.0.1:{free_port()}/0", fallback=DatabaseStore(clock), clock=clock, monotonic=lambda: monotonic[0]
    )
    tool = tool_name()
    with caplog.at_level("WARNING", logger="agents.tools.breaker_redis"):
        fail(away, tool, 3)
        assert enter(away, tool).refused == CIRCUIT_OPEN
        monotonic[0] += 60  # it tries Redis again, still away: no second message
        assert away.snapshot(tool, breaker=B).state == OPEN
    assert ToolBreaker.objects.get(tool=tool).state == OPEN  # shared by every process, not kept in this one
    warnings = [r for r in caplog.records if "Redis unreachable" in r.getMessage()]
    assert len(warnings) == 1

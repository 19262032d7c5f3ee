"""The gate under real concurrency: threads racing in one process, and two processes sharing the state.

Each runs on the store this run configures (Redis with ``CELERY_BROKER_URL=redis://…``, the database
otherwise: SQLite or PostgreSQL), through the interface the tool-call services call. Threads and
processes each have their own database connection; on SQLite they share a file copy of the test
database (``tests.support.breakers.shared_database``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import transaction

from agents.tools.breaker_backend import redis_url, store
from agents.tools.breaker_machine import Breaker
from agents.tools.errors import CircuitOpen, ToolConcurrency
from agents.tools.gate import CLOSED, HALF_OPEN, OPEN, breaker_record, breaker_state, gate_enter
from tests.support.breakers import another_process, answers, shared_database, tool_name, wall_deadline

THREADS = 8
ROUNDS = 5


@pytest.fixture
def shared(transactional_db, tmp_path):
    store.cache_clear()
    with shared_database(tmp_path) as database:
        yield database
    store.cache_clear()


def race(shared, calls: int, enter) -> list[str]:
    """``calls`` threads released together, each calling ``enter(i)`` in a transaction of its own (as the
    tool-call check does); what each got: a permit's state or the refusal's code."""
    barrier = threading.Barrier(calls, timeout=30)

    def one(i: int) -> str:
        with shared.thread_connection():
            barrier.wait()
            try:
                with transaction.atomic():
                    return enter(i).state
            except (CircuitOpen, ToolConcurrency) as refused:
                return refused.code

    with ThreadPoolExecutor(max_workers=calls) as pool:
        return list(pool.map(one, range(calls)))


def test_racing_threads_never_hold_more_than_max_concurrent_leases(shared):
    for _ in range(ROUNDS):
        tool = tool_name("race")
        got = race(
            shared,
            THREADS,
            lambda i, tool=tool: gate_enter(
                tool, breaker=None, max_concurrent=2, lease=f"{i}:1", deadline_ms=wall_deadline(60)
            ),
        )
        assert sorted(got) == [CLOSED] * 2 + ["tool_concurrency"] * (THREADS - 2)
        assert store().snapshot(tool, breaker=None).in_flight == 2


BREAKER = {"failure_threshold": 1, "window_s": 60, "half_open_after_ms": 0, "trial_calls": 3}


def test_half_open_lets_exactly_trial_calls_through_racing_threads(shared):
    for _ in range(ROUNDS):
        tool = tool_name("trial")
        assert breaker_record(tool, breaker=BREAKER, ok=False) == OPEN
        got = race(
            shared,
            THREADS,
            lambda i, tool=tool: gate_enter(
                tool, breaker=BREAKER, max_concurrent=None, lease=f"{i}:1", deadline_ms=wall_deadline(60)
            ),
        )
        assert sorted(got) == ["circuit_open"] * (THREADS - 3) + [HALF_OPEN] * 3


def test_failures_in_two_processes_open_the_breaker_both_see(shared):
    """Two processes each record two failures at the same time; the threshold is four: only a shared,
    atomic count opens it. Then each process sees it open, and this one too."""
    tool = tool_name("proc")
    breaker = {"failure_threshold": 4, "window_s": 60, "half_open_after_ms": 600_000, "trial_calls": 1}
    fail = {"op": "record", "tool": tool, "breaker": breaker, "ok": False}
    one, two = another_process(shared.url, fail, fail), another_process(shared.url, fail, fail)
    first, second = answers(one), answers(two)
    expected_store = "redis" if redis_url() else "database"
    assert first[0] == second[0] == expected_store
    assert sorted(first[1:] + second[1:]) == [CLOSED, CLOSED, CLOSED, OPEN]
    look = {"op": "state", "tool": tool, "breaker": breaker}
    enter = {"op": "enter", "tool": tool, "breaker": breaker, "lease": "1:1", "deadline_ms": wall_deadline(60)}
    assert answers(another_process(shared.url, look, enter))[1:] == [OPEN, "circuit_open"]
    assert breaker_state(tool, breaker=breaker) == OPEN


def test_a_limit_held_in_one_process_refuses_in_the_other(shared):
    tool = tool_name("limit")
    step = {"op": "enter", "tool": tool, "breaker": None, "max_concurrent": 1, "deadline_ms": wall_deadline(60)}
    assert answers(another_process(shared.url, {**step, "lease": "1:1"}))[1:] == [CLOSED]
    assert answers(another_process(shared.url, {**step, "lease": "2:1"}))[1:] == ["tool_concurrency"]
    assert Breaker.of(None) is None

"""Tool calls under real concurrency: pytest-django's threaded live server, real HTTP clients released
together by a barrier, a connection per request on SQLite (``connection_per_request``), several rounds
on fresh sessions.

What must hold whatever the interleaving: two checks of one new operation id start exactly one attempt
(the other gets the same answer: the session's lock orders them, the second finds the call in flight);
two new operations of one state while a third waits for its retry are both refused (the retry lease is
read under the same lock); two results of one attempt record it once, and answer alike. And a whole
call — check, a retryable failure, the retry, success — works end to end over the network.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest

from agents.runtimes.services import agent_create
from agents.tools.models import ToolAttempt, ToolCall
from rules.config.yaml_import import config_import
from tests.support.http import Agent, Answer
from tests.support.live_sqlite import connection_per_request
from tests.support.tool_calls import PHONE, TOOLS_DOCUMENT

ROUNDS = 6


@pytest.fixture
def bot(live_server, transactional_db, tmp_path) -> Iterator[Agent]:
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        config_import(text=TOOLS_DOCUMENT, source="test", actor=None, reason="tool races")
        _, token = agent_create(name="tool_bot", point_keys=[], actor=None, reason="tool races")
        yield Agent(live_server.url, token, "tool_bot")


def at_once(*requests: Callable[[], Answer]) -> list[Answer]:
    barrier = threading.Barrier(len(requests), timeout=30)

    def one(request: Callable[[], Answer]) -> Answer:
        barrier.wait()
        return request()

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        answers = list(pool.map(one, requests))
    for answer in answers:
        assert answer.status < 500, answer  # a race is never a server error
    return answers


def check(bot: Agent, key: str, tool: str, input: dict, operation_id: str, expected: str = "start") -> Answer:
    body = {"tool": tool, "input": input, "expected_state": expected, "operation_id": operation_id}
    return bot.post(f"/api/v1/sessions/{key}/tool-calls", body)


def test_two_checks_of_one_new_operation_start_exactly_one_attempt(bot):
    for round_ in range(ROUNDS):
        key = f"same-{round_}"
        assert bot.start("tooling", key).status == 201
        op = f"op-{round_}"
        same = partial(check, bot, key, "verify_phone", {"phone": PHONE}, op)
        first, second = at_once(same, same)
        assert (first.status, second.status) == (201, 201), (first, second)
        assert first.body["attempt"] == second.body["attempt"] == 1
        assert first.body["deadline"] == second.body["deadline"]
        assert ToolAttempt.objects.filter(call__operation_id=op).count() == 1


def test_two_results_of_one_attempt_record_it_once_and_answer_alike(bot):
    """The result locks the session, the call and its attempt (on PostgreSQL in one statement): the second
    result waits for the first and finds the attempt finished, a repeat."""
    for round_ in range(ROUNDS):
        key = f"twice-{round_}"
        assert bot.start("tooling", key).status == 201
        op = f"r-{round_}"
        assert check(bot, key, "verify_phone", {"phone": PHONE}, op).status == 201
        result = partial(bot.post, f"/api/v1/tool-calls/{op}/result", {"output": {"verified": True}, "duration_ms": 3})
        first, second = at_once(result, result)
        assert (first.status, second.status) == (200, 200), (first, second)
        assert first.body == second.body
        assert first.body["next"] == "done"
        assert ToolAttempt.objects.filter(call__operation_id=op, finished_at__isnull=False).count() == 1


def test_the_retry_lease_holds_against_two_new_operations_at_once(bot):
    for round_ in range(ROUNDS):
        key = f"lease-{round_}"
        assert bot.start("tooling", key).status == 201
        waits = f"waits-{round_}"
        assert check(bot, key, "slow_retry", {}, waits).status == 201
        failed = bot.post(
            f"/api/v1/tool-calls/{waits}/result", {"error": {"code": "RATE_LIMIT_EXCEEDED"}, "duration_ms": 5}
        )
        assert failed.body["next"] == "retry", failed
        one, two = at_once(
            partial(check, bot, key, "verify_phone", {"phone": PHONE}, f"a-{round_}"),
            partial(check, bot, key, "flaky", {}, f"b-{round_}"),
        )
        assert (one.status, one.code, two.status, two.code) == (409, "retry_in_progress", 409, "retry_in_progress")
        assert ToolCall.objects.filter(session__key=key).count() == 1


def test_a_call_retried_after_a_rate_limit_succeeds_end_to_end(bot):
    assert bot.start("tooling", "e2e").status == 201
    first = check(bot, "e2e", "verify_phone", {"phone": PHONE}, "e2e-op")
    assert (first.status, first.body["attempt"]) == (201, 1)
    failed = bot.post("/api/v1/tool-calls/e2e-op/result", {"error": {"code": "RATE_LIMIT_EXCEEDED"}, "duration_ms": 9})
    assert (failed.body["next"], failed.body["attempt"]) == ("retry", 2)
    deadline = time.monotonic() + 10
    while (again := check(bot, "e2e", "verify_phone", {"phone": PHONE}, "e2e-op")).status == 409:
        assert again.code == "retry_in_progress" and time.monotonic() < deadline, again
        time.sleep(again.body["retry_after_ms"] / 1000)
    assert (again.status, again.body["attempt"]) == (201, 2)
    done = bot.post("/api/v1/tool-calls/e2e-op/result", {"output": {"verified": True}, "duration_ms": 30})
    assert (done.status, done.body["next"], done.body["attempt"]) == (200, "done", 2)
    timeline = bot.get("/api/v1/sessions/e2e/timeline").body["events"]
    kinds = [(e["type"], e.get("attempt")) for e in timeline]
    assert kinds == [("tool_invocation", 1), ("error_handled", 1), ("tool_invocation", 2), ("tool_result", 2)], kinds

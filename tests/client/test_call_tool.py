"""``session.call_tool`` against a live server holding the demo's tool contracts: the check before the
call, the result after it, the retries the contract allows, the give-up it orders, and the refusals
that keep a call from reaching the tool at all (schema, whitelist, open breaker)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import arbiter_client as ac
import pytest
import yaml

from agents.sessions.models import Anomaly
from agents.tools.models import ToolAttempt, ToolCall
from tests.support import DEMO_TEXT

PHONE = "13800138000"


@pytest.fixture
def live_config() -> str:
    """The demo, with verify_phone's timeout short enough to outlive in a test."""
    document = yaml.safe_load(DEMO_TEXT)
    for tool in document["tools"]:
        if tool["name"] == "verify_phone":
            tool["timeout_ms"] = 300
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


class Tool:
    """A tool function that answers from a script (a ``ToolError`` code, or an output), counting its runs."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.inputs: list[Any] = []

    def __call__(self, given: Any) -> Any:
        self.inputs.append(given)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, str):
            raise ac.ToolError(answer, "scripted")
        return answer


class Waits:
    """``sleep`` that really waits (the server holds the retry until then) and remembers each wait."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        time.sleep(seconds)


def attempts(operation_id: str) -> list[tuple[int, str, str]]:
    call = ToolCall.objects.get(operation_id=operation_id)
    return list(
        ToolAttempt.objects.filter(call=call).order_by("attempt").values_list("attempt", "outcome", "error_code")
    )


def test_a_call_the_contract_allows_runs_once_and_returns_its_output(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-ok")
    tool = Tool({"verified": True})
    assert session.call_tool("verify_phone", {"phone": PHONE}, tool, operation_id="op-ok") == {"verified": True}
    assert tool.inputs == [{"phone": PHONE}]
    assert attempts("op-ok") == [(1, "ok", "")]
    assert session.state == "init" and "verify_phone" in (session.allowed_actions or [])


def test_an_input_the_schema_refuses_never_reaches_the_tool(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-abc")
    tool = Tool({"verified": True})
    for bad in ({"phone": "abc"}, {"phone": 13800138000}):
        with pytest.raises(ac.InvalidToolInput) as refused:
            session.call_tool("verify_phone", bad, tool)
        assert list(refused.value.errors) == ["/phone"] and refused.value.status == 422
    assert tool.inputs == [] and not ToolCall.objects.filter(session__key="tool-abc").exists()
    assert Anomaly.objects.filter(session_id="tool-abc").count() == 2
    assert session.state == "init"


def test_a_tool_the_state_does_not_name_is_refused(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-where")
    tool = Tool({"order_id": "SO20240001"})
    with pytest.raises(ac.ToolNotAllowed) as refused:
        session.call_tool("update_order", {"order_id": "SO20240001"}, tool)  # named in received, not init
    assert tool.inputs == [] and isinstance(refused.value, ac.SessionRefused)


def test_rate_limits_are_retried_with_the_same_operation_until_the_output_comes(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-rl")
    order = {"order_id": "SO20240001", "status": "shipped"}
    tool = Tool("RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED", order)
    waits = Waits()
    assert (
        session.call_tool("query_order", {"order_id": "SO20240001"}, tool, operation_id="op-rl", sleep=waits) == order
    )
    assert len(tool.inputs) == 3
    assert attempts("op-rl") == [
        (1, "error", "RATE_LIMIT_EXCEEDED"),
        (2, "error", "RATE_LIMIT_EXCEEDED"),
        (3, "ok", ""),
    ]
    # The contract's exponential backoff from 100 ms (jitter 0.5): the second wait at least the first's half.
    assert len(waits.seconds) >= 2 and all(0 < s <= 3 for s in waits.seconds)
    assert ToolCall.objects.filter(session__key="tool-rl").count() == 1


def test_a_failure_the_contract_does_not_retry_gives_up_and_hands_the_session_over(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-nf")
    tool = Tool("ORDER_NOT_FOUND")
    with pytest.raises(ac.ToolGaveUp) as gave_up:
        session.call_tool("query_order", {"order_id": "SO99999999"}, tool, operation_id="op-nf")
    assert gave_up.value.code == "ORDER_NOT_FOUND" and gave_up.value.session is session
    assert gave_up.value.answer["next"] == "give_up"
    # query_order's on_exhausted is the default, handoff: the answer moved the session, the helper followed.
    assert (session.state, session.handed_off) == ("human_handoff", True)
    assert len(tool.inputs) == 1 and attempts("op-nf") == [(1, "error", "ORDER_NOT_FOUND")]


def test_an_exception_is_reported_by_its_type_and_chained_to_the_give_up(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-exc")
    tool = Tool(ValueError("bad answer from the upstream"))
    with pytest.raises(ac.ToolGaveUp) as gave_up:
        session.call_tool("verify_phone", {"phone": PHONE}, tool, operation_id="op-exc")
    assert gave_up.value.code == "exception:ValueError"
    assert isinstance(gave_up.value.__cause__, ValueError)
    assert attempts("op-exc") == [(1, "error", "exception:ValueError")]


def test_a_call_past_its_timeout_is_reported_as_timeout(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-slow")
    release = threading.Event()

    def hangs(given: Any) -> Any:
        release.wait(5)
        return {"verified": True}

    started = time.perf_counter()
    try:
        with pytest.raises(ac.ToolGaveUp) as gave_up:
            session.call_tool("verify_phone", {"phone": PHONE}, hangs, operation_id="op-slow")
    finally:
        release.set()
    assert gave_up.value.code == "TIMEOUT" and time.perf_counter() - started < 3
    (attempt,) = ToolAttempt.objects.filter(call__operation_id="op-slow")
    assert attempt.error_code == "TIMEOUT" and attempt.duration_ms >= 300


def test_an_open_breaker_fails_fast_without_running_the_tool(bot) -> None:
    """query_order's breaker opens after 5 failures within 30 s; the sixth call is refused at the check."""
    for number in range(5):
        session = bot.session(machine="after_sales", session_id=f"tool-down-{number}")
        with pytest.raises(ac.ToolGaveUp):
            session.call_tool("query_order", {"order_id": "SO20240001"}, Tool("UPSTREAM_UNAVAILABLE"))
    session = bot.session(machine="after_sales", session_id="tool-down-last")
    tool = Tool({"order_id": "SO20240001"})
    sent = bot.counter.requests
    with pytest.raises(ac.CircuitOpen) as refused:
        session.call_tool("query_order", {"order_id": "SO20240001"}, tool)
    assert tool.inputs == [] and refused.value.status == 503
    assert refused.value.retry_after_ms is not None and 0 < refused.value.retry_after_ms <= 10_000
    assert bot.counter.requests - sent == 1  # not retried by the transport (its 503 retries are for others)
    assert session.state == "init"


def test_repeating_a_check_in_flight_starts_no_second_attempt(bot) -> None:
    session = bot.session(machine="after_sales", session_id="tool-twice")
    first = bot.tool_call_check(
        "tool-twice", "verify_phone", {"phone": PHONE}, expected_state="init", operation_id="op-2"
    )
    again = bot.tool_call_check(
        "tool-twice", "verify_phone", {"phone": PHONE}, expected_state="init", operation_id="op-2"
    )
    assert (first["operation_id"], first["attempt"]) == (again["operation_id"], again["attempt"]) == ("op-2", 1)
    assert session.call_tool("verify_phone", {"phone": PHONE}, Tool({"verified": False}), operation_id="op-2") == {
        "verified": False
    }
    assert attempts("op-2") == [(1, "ok", "")]
    with pytest.raises(ac.OperationFinished) as finished:
        session.call_tool("verify_phone", {"phone": PHONE}, Tool({"verified": True}), operation_id="op-2")
    assert finished.value.answer.get("next") == "done"


def test_the_async_session_runs_the_same_policy(live) -> None:
    token = live.agent().http.headers["Authorization"].split()[1]

    async def scenario() -> tuple[Any, list[float]]:
        waited: list[float] = []

        async def pause(seconds: float) -> None:
            waited.append(seconds)
            await asyncio.sleep(seconds)

        answers = ["RATE_LIMIT_EXCEEDED", {"order_id": "SO20240002"}]

        async def tool(given: Any) -> Any:
            answer = answers.pop(0)
            if isinstance(answer, str):
                raise ac.ToolError(answer)
            return answer

        async with ac.AsyncArbiter(live.url, token, retry=ac.RetryPolicy(max_retries=2, base_delay=0.01)) as arbiter:
            session = await arbiter.session(machine="after_sales", session_id="tool-async")
            output = await session.call_tool(
                "query_order", {"order_id": "SO20240002"}, tool, operation_id="op-async", sleep=pause
            )
            with pytest.raises(ac.InvalidToolInput):
                await session.call_tool("query_order", {"order_id": "nope"}, tool)
        return output, waited

    output, waited = asyncio.run(scenario())
    assert output == {"order_id": "SO20240002"} and len(waited) >= 1
    assert attempts("op-async") == [(1, "error", "RATE_LIMIT_EXCEEDED"), (2, "ok", "")]

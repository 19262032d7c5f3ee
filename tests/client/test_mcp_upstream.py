"""The demo's upstream MCP server, through the SDK's own client (``ClientSession`` over streamable HTTP) in
a process of its own: what the gateway's tests and the benchmark build on must itself be a correct MCP
server — tools listed with their schemas and annotations, calls answered, injected faults answered as tool
errors (``isError``) carrying the contracts' codes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.mcp_upstream import McpUpstream, mcp_upstream

T = TypeVar("T")


@pytest.fixture(scope="module")
def upstream() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstream: McpUpstream) -> None:
    upstream.reset()


def over_mcp(url: str, work: Callable[[ClientSession], Awaitable[T]]) -> T:
    async def run() -> T:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return asyncio.run(run())


def call(upstream: McpUpstream, tool: str, arguments: dict[str, Any]) -> Any:
    return over_mcp(upstream.url, lambda s: s.call_tool(tool, arguments))


def test_tools_are_listed_with_schemas_and_annotations(upstream):
    listed = {t.name: t for t in over_mcp(upstream.url, lambda s: s.list_tools()).tools}

    assert set(listed) == {"verify_phone", "query_order", "update_order"}
    assert listed["verify_phone"].input_schema["required"] == ["phone"]
    assert listed["query_order"].input_schema["properties"]["order_id"]["pattern"] == "^[A-Z]{2}[0-9]{8}$"
    assert listed["update_order"].output_schema["required"] == ["order_id", "updated"]
    for name in ("verify_phone", "query_order"):
        annotations = listed[name].annotations
        assert (annotations.read_only_hint, annotations.idempotent_hint) == (True, True)
    update = listed["update_order"].annotations
    assert (update.read_only_hint, update.destructive_hint) == (False, False)  # the demo's risk: write


def test_a_call_is_answered_with_structured_content(upstream):
    result = call(upstream, "query_order", {"order_id": "SO20240001"})

    assert not result.is_error
    assert result.structured_content["status"] == "shipped"
    assert upstream.calls()["counts"] == {"query_order": 1}


def test_the_order_book_answers_its_own_failures(upstream):
    locked = call(upstream, "update_order", {"order_id": "SO20240001", "address": "上海市浦东新区 1 号"})
    missing = call(upstream, "query_order", {"order_id": "SO99999999"})

    assert (locked.is_error, locked.structured_content["code"]) == (True, "ORDER_LOCKED")
    assert (missing.is_error, missing.structured_content["code"]) == (True, "ORDER_NOT_FOUND")


def test_an_input_outside_the_schema_is_a_tool_error(upstream):
    result = call(upstream, "verify_phone", {"phone": 13800138000})

    assert result.is_error
    assert result.structured_content["code"] == "INVALID_INPUT"
    assert "13800138000 is not of type 'string'" in result.structured_content["message"]


def test_injected_failures_are_tool_errors_with_the_contract_codes(upstream):
    upstream.control(fail_next={"query_order": 2})
    codes = [call(upstream, "query_order", {"order_id": "SO20240002"}) for _ in range(3)]

    assert [(r.is_error, (r.structured_content or {}).get("code")) for r in codes] == [
        (True, "RATE_LIMIT_EXCEEDED"),
        (True, "RATE_LIMIT_EXCEEDED"),
        (False, None),
    ]
    assert [c["outcome"] for c in upstream.calls()["calls"]] == ["RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED", "ok"]


def test_an_outage_fails_every_call_until_it_ends(upstream):
    upstream.control(outage=True)
    down = [
        call(upstream, t, a)
        for t, a in (("verify_phone", {"phone": "13800138000"}), ("query_order", {"order_id": "SO20240002"}))
    ]
    upstream.control(outage=False)
    up = call(upstream, "verify_phone", {"phone": "13800138000"})

    assert {(r.is_error, r.structured_content["code"]) for r in down} == {(True, "UNAVAILABLE")}
    assert (up.is_error, up.structured_content) == (False, {"verified": True})


def test_the_rate_limit_ratio_is_seeded(upstream):
    def draw() -> list[bool]:
        upstream.control(reset=True, rate_limit_ratio=0.3, seed=7)
        return [call(upstream, "query_order", {"order_id": "SO20240002"}).is_error for _ in range(12)]

    first = draw()
    assert first == draw()
    assert 0 < sum(first) < 12


def test_a_schema_version_changes_the_listed_input_schema(upstream):
    upstream.control(schema_version=2)
    listed = {t.name: t for t in over_mcp(upstream.url, lambda s: s.list_tools()).tools}

    assert "include_history" in listed["query_order"].input_schema["properties"]
    assert "include_history" not in listed["verify_phone"].input_schema["properties"]


def test_an_unknown_control_setting_is_refused(upstream):
    response = httpx.post(f"{upstream.base}/control", json={"outgae": True}, timeout=10)

    assert (response.status_code, response.json()["code"]) == (400, "invalid_control")


def test_latency_delays_each_answer(upstream):
    upstream.control(latency_ms=300)
    started = time.perf_counter()
    result = call(upstream, "verify_phone", {"phone": "13800138001"})

    assert time.perf_counter() - started >= 0.3
    assert result.structured_content == {"verified": False}


def test_the_generic_command_line_client_lists_and_calls(upstream, capsys):
    from examples.mcp_client import main

    assert main([upstream.url, "list"]) == 0
    assert main([upstream.url, "call", "query_order", '{"order_id": "SO99999999"}']) == 1  # a tool error
    printed = capsys.readouterr().out

    assert printed.startswith("verify_phone  {") and "update_order" in printed
    assert '"code": "ORDER_NOT_FOUND"' in printed

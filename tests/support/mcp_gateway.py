"""The MCP gateway under test: a configuration whose contracts are the demo upstream's tools (namespaced
``orders.*``), Arbiter served by ``bin/serve`` on the test's shared database, and the SDK's own client
(``ClientSession`` over streamable HTTP) talking to its ``/mcp`` with an agent token."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
import yaml
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rules.config.tools import mcp_tool_contract
from tests.support.breakers import SERVED_HEADERS

T = TypeVar("T")

MACHINE = """\
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: orders_flow
    states: [identify, confirming, done, human_handoff]
    initial: identify
    handoff: human_handoff
    terminal: [done]
    transitions:
      identify: [confirming, human_handoff]
      confirming: [done, identify, human_handoff]
      human_handoff: [done, identify]
    actions:
      identify: [orders.query_order]
      confirming: [orders.query_order, orders.update_order]
"""

# What the configuration adds to each upstream tool's imported contract: the policy MCP does not describe.
POLICY: dict[str, dict[str, Any]] = {
    "verify_phone": {"timeout_ms": 1000},  # read-only and named by no state: offered without a session
    "query_order": {
        "error_codes": [
            {"code": "ORDER_NOT_FOUND", "description": "No such order."},
            {
                "code": "RATE_LIMIT_EXCEEDED",
                "retryable": True,
                "max_retries": 3,
                "backoff": {"kind": "fixed", "base_ms": 50, "cap_ms": 50},
            },
        ],
        # A rate limit says the upstream is alive: only other failures open the breaker.
        "circuit_breaker": {
            "failure_threshold": 2,
            "window_s": 60,
            "half_open_after_ms": 60_000,
            "trial_calls": 1,
            "ignore_codes": ["RATE_LIMIT_EXCEEDED"],
        },
    },
    "update_order": {
        "error_codes": [{"code": "ORDER_LOCKED", "description": "The order has shipped."}],
        "needs_approval_in": ["confirming"],
    },
}


def gateway_document() -> str:
    """The machine, and one contract per upstream tool as importing its ``tools/list`` gives it (so the
    upstream matches its approved contracts), named ``orders.<tool>``, with ``POLICY`` added."""
    from examples.after_sales_agent.tools_server import tool_definitions

    tools = []
    for tool in tool_definitions(1):
        contract = mcp_tool_contract(tool.model_dump(by_alias=True, exclude_none=True, mode="json"))
        contract.update(POLICY[tool.name], name=f"orders.{tool.name}")
        tools.append(contract)
    return MACHINE + yaml.safe_dump({"tools": tools}, sort_keys=False, allow_unicode=True)


def rest(base: str, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One call of Arbiter's REST API on a served instance; (status, JSON body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=SERVED_HEADERS)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def over_mcp(base: str, token: str, work: Callable[[ClientSession], Awaitable[T]], *, session: str | None = None) -> T:
    """Run ``work`` with an MCP client session on ``base``'s gateway: the agent's token, and the Arbiter
    session it names (the ``Arbiter-Session`` header) when given."""

    async def run() -> T:
        headers = {**SERVED_HEADERS, "Authorization": f"Bearer {token}"}
        if session is not None:
            headers["Arbiter-Session"] = session
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return await work(client)

    try:
        return asyncio.run(run())
    except BaseExceptionGroup as group:  # the transport's task groups wrap what the work raised
        raise _leaf(group) from group


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def tool_names(base: str, token: str, *, session: str | None = None) -> list[str]:
    async def names(client: ClientSession) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    return over_mcp(base, token, names, session=session)


def call_tool(base: str, token: str, name: str, arguments: dict[str, Any], *, session: str | None = None) -> Any:
    """One ``tools/call`` through the gateway: the SDK's ``CallToolResult``."""

    async def call(client: ClientSession) -> Any:
        return await client.call_tool(name, arguments)

    return over_mcp(base, token, call, session=session)


def tool_names_negotiated(base: str, token: str, *, session: str) -> tuple[str, list[str]]:
    """``tools/list`` through the SDK's unified ``Client``, which negotiates the protocol itself (it probes
    the newer per-request protocol first); the version agreed on, and the names."""
    from mcp.client.client import Client

    async def run() -> tuple[str, list[str]]:
        headers = {**SERVED_HEADERS, "Authorization": f"Bearer {token}", "Arbiter-Session": session}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            names = [tool.name for tool in (await client.list_tools()).tools]
            return str(client.protocol_version), names

    return asyncio.run(run())

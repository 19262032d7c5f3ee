"""The demo's ``orders.*`` contracts and the demo's MCP order server agree: importing the demo and reading the
server's real ``tools/list`` (the SDK's client over streamable HTTP) leaves no tool held back as drift, and
the server's injected schema change is held back — what docs/mcp.md's demo shows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rules.config.mcp_servers import mcp_tools_seen
from tests.support import load_demo
from tests.support.mcp_upstream import McpUpstream, mcp_upstream

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def upstream() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


def listed(url: str) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]

    return asyncio.run(run())


def test_the_demo_s_contracts_are_what_its_order_server_declares(upstream):
    load_demo()
    upstream.reset()

    assert mcp_tools_seen("orders", listed(upstream.url)) == frozenset()


def test_the_order_server_s_schema_change_is_held_back(upstream):
    load_demo()
    upstream.control(reset=True, schema_version=2)

    assert mcp_tools_seen("orders", listed(upstream.url)) == {"query_order"}

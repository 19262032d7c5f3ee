"""The upstream MCP servers, as the gateway's client: per process and per server, one long-lived SDK
``ClientSession`` over streamable HTTP on the gateway's loop (an httpx client with the server's headers
and timeout), opened on first use and opened again after a failure or a change of the server's
configuration. Everything here runs on the loop (``agents.mcp.serving``).

- ``forward`` sends one attempt (the un-namespaced tool name) and tells what came back: the upstream's
  result, or a failure with the code the contract's policy judges — the code in ``structuredContent.code``
  of an ``isError`` result, else a declared code the result's text begins with, else ``TOOL_ERROR``;
  ``TIMEOUT`` when the attempt's time ran out, ``UNAVAILABLE`` when the server could not be reached or
  answered with a protocol error.
- ``listed`` is the upstream's ``tools/list``, read at most every ``tools_refresh_s`` per process; until a
  read succeeds, nothing is known to hold back.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agents.mcp.threads import in_thread
from decision_service import metrics
from rules.config.mcp_servers import McpServerSpec, mcp_tools_seen

logger = logging.getLogger(__name__)

TIMEOUT = "TIMEOUT"
UNAVAILABLE = "UNAVAILABLE"
TOOL_ERROR = "TOOL_ERROR"
_LEADING_CODE = re.compile(r"\s*([A-Za-z][A-Za-z0-9_.-]{0,63})")  # "CODE: message", "CODE - message"
_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


@dataclass(frozen=True, slots=True)
class Forwarded:
    """One attempt's outcome: ``result`` (the upstream's answer, error or not) and, for a failure, ``code``."""

    result: types.CallToolResult | None
    code: str | None
    message: str
    duration_ms: int


def result_text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def error_code(result: types.CallToolResult, declared: Mapping[str, Any]) -> str:
    """The contract code of an upstream ``isError`` result (see the module docstring)."""
    structured = result.structured_content
    if isinstance(structured, Mapping) and isinstance(structured.get("code"), str):
        code = structured["code"]
        return code if _CODE.fullmatch(code) else TOOL_ERROR
    leading = _LEADING_CODE.match(result_text(result))
    if leading and (code := leading.group(1).rstrip(".-")) in declared:
        return code
    return TOOL_ERROR


class Upstream:
    """One upstream server's client session, held open by a task of its own on the loop."""

    def __init__(self, spec: McpServerSpec) -> None:
        self.spec = spec
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None  # kept: the loop holds only weak references to tasks
        self._lock = asyncio.Lock()
        self.listed_at = 0.0
        self.held_back: frozenset[str] = frozenset()

    async def session(self) -> ClientSession:
        async with self._lock:
            if self._session is not None:
                return self._session
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._holder = asyncio.create_task(self._hold(ready, self._stop))
            self._session = await asyncio.wait_for(ready, timeout=max(1.0, self.spec.timeout_ms / 1000))
            return self._session

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        # The transport's task group is entered and left in this one task, as anyio requires.
        timeout = httpx2.Timeout(max(1.0, self.spec.timeout_ms / 1000))
        try:
            async with (
                httpx2.AsyncClient(headers=dict(self.spec.headers), timeout=timeout) as http,
                streamable_http_client(self.spec.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                ready.set_result(session)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.warning("mcp upstream %s: the session ended: %s", self.spec.name, exc)
        finally:
            if not ready.done():
                ready.cancel()

    def due(self, now: float) -> bool:
        """Its ``tools/list`` is to be read (again): never read, or older than ``tools_refresh_s``."""
        return not self.listed_at or now - self.listed_at >= self.spec.tools_refresh_s

    def reset(self) -> None:
        """Forget the session (it failed): the next use opens a new one."""
        self._session = None
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    async def forward(self, tool: str, arguments: Mapping[str, Any], *, timeout_s: float, declared: Any) -> Forwarded:
        started = time.monotonic()

        def took() -> int:
            return round((time.monotonic() - started) * 1000)

        try:
            async with asyncio.timeout(max(0.001, timeout_s)):
                session = await self.session()
                result = await session.call_tool(tool, dict(arguments))
        except TimeoutError:
            self.reset()
            return Forwarded(None, TIMEOUT, f"{self.spec.name} did not answer within {timeout_s:.3g} s.", took())
        except Exception as exc:  # the server unreachable, a broken session, or a JSON-RPC error
            self.reset()
            return Forwarded(None, UNAVAILABLE, f"{self.spec.name}: {type(exc).__name__}: {exc}"[:500], took())
        finally:
            metrics.mcp_upstream_observed(server=self.spec.name, seconds=time.monotonic() - started)
        if result.is_error:
            return Forwarded(result, error_code(result, declared), result_text(result), took())
        return Forwarded(result, None, "", took())

    async def listed(self) -> list[dict[str, Any]] | None:
        """The upstream's tools (MCP wire dicts), or None when it could not be read now."""
        try:
            async with asyncio.timeout(max(1.0, self.spec.timeout_ms / 1000)):
                session = await self.session()
                result = await session.list_tools()
        except Exception as exc:
            self.reset()
            logger.warning("mcp upstream %s: tools/list failed: %s", self.spec.name, exc)
            return None
        return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in result.tools]


_upstreams: dict[str, Upstream] = {}


def upstream(spec: McpServerSpec) -> Upstream:
    """The process's client of ``spec``'s server; a new one when its configuration changed. On the loop."""
    current = _upstreams.get(spec.name)
    if current is None or current.spec != spec:
        if current is not None:
            current.reset()
        current = _upstreams[spec.name] = Upstream(spec)
    return current


def held_back_known(servers: Mapping[str, McpServerSpec]) -> dict[str, frozenset[str]] | None:
    """Per server, the tools its last ``tools/list`` holds back — or None when a server's list is due to be
    read again (or its client is not made yet): then ``held_back`` is awaited on the loop. Only reads, so it
    may run on a pool thread, in the same hop as the check that needs its answer."""
    now = time.monotonic()
    known: dict[str, frozenset[str]] = {}
    for name, spec in servers.items():
        client = _upstreams.get(name)
        if client is None or client.spec != spec or client.due(now):
            return None
        known[name] = client.held_back
    return known


async def _refreshed(client: Upstream, server: str) -> None:
    client.listed_at = time.monotonic()  # first: concurrent requests do not all read it again
    tools = await client.listed()
    if tools is not None:
        client.held_back = await in_thread(mcp_tools_seen, server, tools)


async def held_back(servers: Mapping[str, McpServerSpec]) -> dict[str, frozenset[str]]:
    """Per upstream server, the tools its last ``tools/list`` holds back, each list read again when due
    (``tools_refresh_s``) and given to ``mcp_tools_seen``, whose answer holds until the next read."""
    clients = {name: upstream(spec) for name, spec in servers.items()}
    now = time.monotonic()
    due = [_refreshed(client, name) for name, client in clients.items() if client.due(now)]
    if due:
        await asyncio.gather(*due)
    return {name: client.held_back for name, client in clients.items()}

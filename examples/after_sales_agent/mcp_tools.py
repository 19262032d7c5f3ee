"""The reference agent's MCP mode: its tool side speaks only MCP, to Arbiter's gateway at ``/mcp``.

A runtime that calls tools over MCP needs no Arbiter client for them: it connects the SDK's
``ClientSession`` over streamable HTTP to ``<arbiter>/mcp`` with its agent token (``Authorization:
Bearer``) and the conversation's session (``Arbiter-Session``), lists the tools (the gateway answers the
ones the session's state allows, with the approved contracts' schemas) and calls them. Arbiter checks each
call against the policy (state, input schema, retry lease, breaker, approval), forwards it to the upstream
(``orders.query_order`` → the ``orders`` server's ``query_order``), retries what the contract says is
retryable, and answers one result; a refusal or a give-up is a tool error (``isError``) whose
``structuredContent.code`` says which. So this side makes no REST tool-call request: no
``POST …/tool-calls``, no ``…/result``.

The decide calls stay on REST (``arbiter_client``): the gateway exposes tools, and deciding a customer's
message is not a tool the model calls — it is the runtime asking where the conversation goes. After a tool
call the agent reads the session over REST once (``session.refresh``) to know the state it replies from.

The SDK is asynchronous and the agent is not: one event loop runs on a thread of its own, and each
conversation's connection is held open there by a task of its own (the SDK's context managers must be
left by the task that entered them).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from arbiter_client import Arbiter, Session
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.after_sales_agent.parts import TOOL_REPLIES, ToolTurn

T = TypeVar("T")
SESSION_HEADER = "Arbiter-Session"


def outcome(code: str) -> str:
    """A tool error's code as the REST mode's ``ToolTurn.outcome`` names it (agent.py ``_use_tool``):
    Arbiter's refusals have snake_case codes (``invalid_tool_input`` and ``circuit_open`` are outcomes of
    their own, the others ``refused``); an upstream's code (``ORDER_NOT_FOUND``) is what the gateway gave
    up on."""
    if code in ("invalid_tool_input", "circuit_open"):
        return code
    return "gave_up" if code.isupper() else "refused"


class _Loop:
    """An asyncio event loop on a daemon thread; ``run`` waits for a coroutine's result from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="agent-mcp-loop", daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@dataclass
class McpConnection:
    """One conversation's MCP connection to the gateway (its session named in every request)."""

    url: str
    headers: dict[str, str]
    timeout: float
    _session: ClientSession | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _failed: list[BaseException] = field(default_factory=list)

    async def hold(self) -> None:
        """Open the connection and keep it open until ``close``."""
        try:
            timeout = httpx2.Timeout(self.timeout)
            async with (
                httpx2.AsyncClient(headers=self.headers, timeout=timeout) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # handed to the thread waiting in ``opened``; the task ends quietly
            self._failed.append(exc)
            self._ready.set()

    async def opened(self) -> ClientSession:
        await self._ready.wait()
        if self._failed:
            raise self._failed[0]
        assert self._session is not None
        return self._session


class McpToolSide:
    """The agent's tools over MCP, through Arbiter's gateway: ``tools(session)`` (what the session's state
    allows), ``call(session, name, input)`` (one governed call, the gateway's result).

    ``server`` is the upstream's name in Arbiter's configuration: the conversations name a tool plainly
    (``query_order``) and the gateway exposes it namespaced (``orders.query_order``)."""

    def __init__(self, base_url: str, token: str, *, server: str = "orders", timeout: float = 60.0):
        self.url = base_url.rstrip("/") + "/mcp"
        self.token = token
        self.server = server
        self.timeout = timeout
        self.requests = 0  # MCP requests made (tools/list and tools/call), as the REST client counts its own
        self._loop = _Loop()
        self._connections: dict[str, tuple[McpConnection, asyncio.Future[None]]] = {}

    @classmethod
    def for_agent(cls, arbiter: Arbiter, **options: Any) -> McpToolSide:
        """The same Arbiter and agent token as the REST client's (its decides)."""
        token = arbiter.http.headers["Authorization"].removeprefix("Bearer ").strip()
        return cls(str(arbiter.http.base_url), token, **options)

    def name(self, tool: str) -> str:
        return tool if "." in tool else f"{self.server}.{tool}"

    def _connection(self, session_id: str) -> McpConnection:
        if session_id not in self._connections:
            headers = {"Authorization": f"Bearer {self.token}", SESSION_HEADER: session_id}
            connection = McpConnection(self.url, headers, self.timeout)

            async def start() -> asyncio.Future[None]:
                return asyncio.ensure_future(connection.hold())

            task = self._loop.run(start(), self.timeout)
            self._connections[session_id] = (connection, task)
        return self._connections[session_id][0]

    def _request(self, session_id: str, work: Callable[[ClientSession], Coroutine[Any, Any, T]]) -> T:
        connection = self._connection(session_id)

        async def run() -> T:
            return await work(await connection.opened())

        self.requests += 1
        return self._loop.run(run(), self.timeout)

    def tools(self, session: Session | str) -> list[types.Tool]:
        """What ``tools/list`` answers for the session: the tools its current state allows."""
        session_id = session if isinstance(session, str) else session.session_id
        return list(self._request(session_id, lambda s: s.list_tools()).tools)

    def call(self, session: Session | str, tool: str, input: Mapping[str, Any]) -> types.CallToolResult:
        """One ``tools/call`` through the gateway (its retries happen inside it): the result as answered."""
        session_id = session if isinstance(session, str) else session.session_id
        name = self.name(tool)

        async def work(client: ClientSession) -> types.CallToolResult:
            result = await client.call_tool(name, dict(input))
            assert isinstance(result, types.CallToolResult)
            return result

        return self._request(session_id, work)

    def use(self, session: Session, tool: str, input: Mapping[str, Any]) -> ToolTurn:
        """The REST mode's ``use_tool`` over MCP: one call, what came of it, the session read once after it
        (the state the reply is made from, and whether a give-up handed the conversation to a person)."""
        before = self.requests
        turn = ToolTurn(tool, dict(input))
        result = self.call(session, tool, input)
        content = result.structured_content if isinstance(result.structured_content, Mapping) else {}
        if not result.is_error:
            turn.outcome, turn.output = "done", result.structured_content
        else:
            turn.code = str(content.get("code") or "")
            turn.errors = sorted(_pointers(content.get("errors")))
            turn.outcome = outcome(turn.code)
        session.refresh()
        turn.state, turn.handed_off = session.state, session.handed_off
        turn.reply = TOOL_REPLIES.get(turn.outcome, TOOL_REPLIES["refused"])
        turn.arbiter_calls = self.requests - before
        return turn

    def close(self) -> None:
        for connection, task in self._connections.values():
            self._loop.loop.call_soon_threadsafe(connection._closing.set)
            self._loop.run(_awaited(task), self.timeout)  # ``hold`` never raises: it keeps what failed
        self._connections.clear()
        self._loop.close()

    def __enter__(self) -> McpToolSide:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _awaited(task: asyncio.Future[None]) -> None:
    await task


def _pointers(errors: Any) -> list[str]:
    """The JSON pointers an ``invalid_tool_input`` names: a mapping pointer → messages, or a list of
    ``{"pointer": …}`` / ``{"path": …}`` items."""
    if isinstance(errors, Mapping):
        return [str(k) for k in errors]
    if isinstance(errors, list):
        return [str(e.get("pointer") or e.get("path")) for e in errors if isinstance(e, Mapping)]
    return []


def shown(turn: ToolTurn) -> str:
    keys = ("tool", "outcome", "code", "errors", "state", "arbiter_calls", "reply")
    return json.dumps({k: getattr(turn, k) for k in keys}, ensure_ascii=False)

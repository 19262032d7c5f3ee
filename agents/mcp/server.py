"""The gateway's MCP server (the SDK's low-level ``Server``): ``tools/list`` and ``tools/call``.

The handlers find the caller in the ASGI scope ``agents.mcp.apis`` built (``arbiter.agent``: the agent
the token authenticated) and the session it names: the ``Arbiter-Session`` header, else
``_meta["arbiter.dev/session"]`` on the request. A session this agent does not have is a JSON-RPC error
(``-32602``, ``data.code: unknown_session``), as is an unknown tool name or a malformed operation id: the
request is wrong, not the model's call. Before either list or call, each upstream server's own
``tools/list`` is read again when older than its ``tools_refresh_s`` and given to ``mcp_tools_seen``,
whose answer — the tools not to offer — holds until the next read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from agents.errors import UnknownSession
from agents.mcp import catalog
from agents.mcp.calls import governed_call, unknown_session
from agents.mcp.threads import in_thread
from agents.mcp.upstreams import held_back
from decision_service.principals import AgentPrincipal
from rules.config.tools import mcp_tool_document

INSTRUCTIONS = (
    "Arbiter governs these tools: which of them the conversation's current state allows, their input, "
    "retries, breakers and a person's approval. A refused call answers isError with the reason and a code."
)


def _caller(ctx: ServerRequestContext[Any, Any], meta: Mapping[str, Any] | None) -> catalog.Caller:
    request = ctx.request
    scope = getattr(request, "scope", None) or {}
    agent = scope.get("arbiter.agent")
    if not isinstance(agent, AgentPrincipal):  # only agents.mcp.apis calls the manager
        raise MCPError(types.INVALID_REQUEST, "No authenticated agent.")
    key: Any = request.headers.get(catalog.SESSION_HEADER) if request is not None else None
    if key is None and meta:
        key = meta.get(catalog.META_SESSION)
    if key is not None and not isinstance(key, str):
        raise MCPError(types.INVALID_PARAMS, f"_meta[{catalog.META_SESSION!r}] must be a string.")
    key = (key or "").strip()
    return catalog.Caller(agent=agent, session_key=key or None)


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = _caller(ctx, ctx.meta)
    servers = await in_thread(catalog.upstream_servers)
    held = await held_back(servers)
    try:
        shown = await in_thread(catalog.offered_now, caller, held, servers)
    except UnknownSession as refused:
        raise unknown_session(refused) from None
    return types.ListToolsResult(tools=[types.Tool.model_validate(mcp_tool_document(t.contract)) for t in shown])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    meta: Mapping[str, Any] = params.meta or {}
    caller = _caller(ctx, meta)
    given = meta.get(catalog.META_OPERATION)
    if given is not None and not (isinstance(given, str) and catalog.OPERATION_ID.fullmatch(given)):
        raise MCPError(types.INVALID_PARAMS, f"_meta[{catalog.META_OPERATION!r}]: 1 to 64 letters, digits, _ . : or -.")
    return await governed_call(caller, params.name, params.arguments or {}, given)


def gateway_server() -> Server[Any]:
    return Server("arbiter", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)

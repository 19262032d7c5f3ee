"""The reference agent's order tools as a real MCP server (the official SDK, streamable HTTP): the upstream
Arbiter's MCP gateway governs in the demo, the tests and ``bench/mcp``.

It serves ``verify_phone``, ``query_order`` and ``update_order`` over the mock order book of ``tools.py``
(``OrderSystem``: the same orders and answers the REST reference agent gets), each declared as an MCP server
declares a tool — ``inputSchema``, ``outputSchema``, annotations — with the schemas of the demo's contracts
(demo/after_sales.yaml), so that importing this server's ``tools/list`` gives the contracts the demo approved.
A failure is a tool result, not a protocol error (``isError: true``, ``structuredContent: {code, message}``),
with the codes the demo's contracts declare; during an outage ``UNAVAILABLE``, the transient code an MCP
tool's imported contract declares (``rules.config.tools.MCP_TRANSIENT_CODES``).

Faults are injected by a control route on the same app, so that a test or a benchmark running the server in
another process can steer it: ``POST /control`` with any of

- ``rate_limit_ratio`` (0..1, drawn from a random seeded by ``seed``) and ``rate_limited_tools`` (default:
  every tool): the call answers ``RATE_LIMIT_EXCEEDED``;
- ``outage`` (bool): every call answers ``UNAVAILABLE``;
- ``fail_next`` ``{tool: n}`` (``RATE_LIMIT_EXCEEDED`` n times) or ``{tool: [code, …]}`` (those codes, in order);
- ``schema_version`` (1 or 2): 2 adds a property to ``query_order``'s ``inputSchema`` (an upstream's schema
  drift, which the gateway must hold back until a change request approves it);
- ``latency_ms``: every call waits that long before answering;
- ``reset`` (bool): everything back to the start — faults, call log, order book — before the rest applies.

``GET /control/calls`` answers the calls that reached the tools (``{"counts": {tool: n}, "calls": [...]}``):
what the upstream saw, for assertions on retries and on calls held back.

Run: ``python -m examples.after_sales_agent.tools_server --host 127.0.0.1 --port 0``; it prints its MCP
endpoint's URL on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import socket
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types as types
import uvicorn
from arbiter_client import ToolError
from jsonschema import Draft202012Validator
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from examples.after_sales_agent.tools import RATE_LIMITED, OrderSystem

MCP_PATH = "/mcp"
INVALID_INPUT = "INVALID_INPUT"
UNAVAILABLE = "UNAVAILABLE"
_PHONE = {"type": "string", "pattern": "^1[3-9][0-9]{9}$"}
_ORDER_ID = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{8}$"}
# Read-only and idempotent: asking twice changes nothing and answers the same.
_READ = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False)


@functools.cache
def tool_definitions(schema_version: int = 1) -> tuple[types.Tool, ...]:
    """What ``tools/list`` answers. The schemas are the demo contracts' (demo/after_sales.yaml); version 2
    is the drift a test injects: ``query_order`` takes one more property."""
    query_input: dict[str, Any] = {"type": "object", "properties": {"order_id": _ORDER_ID}, "required": ["order_id"]}
    if schema_version >= 2:
        query_input["properties"] = {**query_input["properties"], "include_history": {"type": "boolean"}}
    return (
        types.Tool(
            name="verify_phone",
            description="Checks that a phone number belongs to the customer.",
            input_schema={
                "type": "object",
                "properties": {"phone": _PHONE},
                "required": ["phone"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {"verified": {"type": "boolean"}},
                "required": ["verified"],
            },
            annotations=_READ,
        ),
        types.Tool(
            name="query_order",
            description="Reads an order.",
            input_schema=query_input,
            output_schema={
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "status": {"type": "string"},
                    "amount": {"type": "number"},
                    "receiver_phone": {"type": "string"},
                },
                "required": ["order_id", "status"],
            },
            annotations=_READ,
        ),
        types.Tool(
            name="update_order",
            description="Changes an order's receiver phone or address.",
            input_schema={
                "type": "object",
                "properties": {
                    "order_id": _ORDER_ID,
                    "receiver_phone": _PHONE,
                    "address": {"type": "string", "minLength": 5, "maxLength": 200},
                },
                "required": ["order_id"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "updated": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["order_id", "updated"],
            },
            # The demo's contract says ``risk: write``: it changes an order but destroys nothing (a later
            # update puts anything back), and the same update twice leaves the order as once.
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
        ),
    )


@functools.cache
def _validator(schema_version: int, tool: str) -> Draft202012Validator:
    """The input schema's validator, compiled once: the benchmark measures the gateway, not this."""
    definition = next(t for t in tool_definitions(schema_version) if t.name == tool)
    return Draft202012Validator(definition.input_schema)


@dataclass
class Faults:
    """What the control route set: the failures the next calls meet."""

    rate_limit_ratio: float = 0.0
    rate_limited_tools: list[str] | None = None  # None: every tool
    seed: int = 0
    outage: bool = False
    fail_next: dict[str, list[str]] = field(default_factory=dict)
    schema_version: int = 1
    latency_ms: int = 0

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)  # noqa: S311 (a reproducible draw, not a secret)


class Upstream:
    """The order book, the faults and the calls seen; one per server process. The lock keeps a call's
    fault draw and the call log consistent when uvicorn serves requests concurrently."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.orders = OrderSystem()
        self.faults = Faults()
        self.counts: Counter[str] = Counter()
        self.calls: list[dict[str, Any]] = []

    def control(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Apply the control route's settings; the faults now in force. Unknown keys are refused."""
        known = {"reset", "rate_limit_ratio", "rate_limited_tools", "seed", "outage", "fail_next"}
        unknown = set(settings) - known - {"schema_version", "latency_ms"}
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
        with self._lock:
            if settings.get("reset"):
                self.reset()
            f = self.faults
            if "seed" in settings:
                f.seed = int(settings["seed"])
                f.random = random.Random(f.seed)  # noqa: S311
            if "rate_limit_ratio" in settings:
                f.rate_limit_ratio = float(settings["rate_limit_ratio"])
            if "rate_limited_tools" in settings:
                f.rate_limited_tools = settings["rate_limited_tools"]
            if "outage" in settings:
                f.outage = bool(settings["outage"])
            for tool, next_ in (settings.get("fail_next") or {}).items():
                f.fail_next[tool] = [RATE_LIMITED] * int(next_) if isinstance(next_, int) else [str(c) for c in next_]
            if "schema_version" in settings:
                f.schema_version = int(settings["schema_version"])
            if "latency_ms" in settings:
                f.latency_ms = int(settings["latency_ms"])
            return self.state()

    def state(self) -> dict[str, Any]:
        f = self.faults
        return {
            "rate_limit_ratio": f.rate_limit_ratio,
            "rate_limited_tools": f.rate_limited_tools,
            "seed": f.seed,
            "outage": f.outage,
            "fail_next": f.fail_next,
            "schema_version": f.schema_version,
            "latency_ms": f.latency_ms,
        }

    def _fault(self, tool: str) -> tuple[str, str] | None:
        f = self.faults
        if f.outage:
            return UNAVAILABLE, "the order service is down"
        if f.fail_next.get(tool):
            return f.fail_next[tool].pop(0), "injected"
        limited = f.rate_limited_tools is None or tool in f.rate_limited_tools
        if limited and f.rate_limit_ratio and f.random.random() < f.rate_limit_ratio:
            return RATE_LIMITED, "too many requests"
        return None

    def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        version = self.faults.schema_version
        if tool not in {t.name for t in tool_definitions(version)}:
            # Not a tool failure the model could act on: the protocol's own error (invalid params).
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {tool!r}")
        with self._lock:
            self.counts[tool] += 1
            fault = self._fault(tool)
            problems = sorted(e.message for e in _validator(version, tool).iter_errors(arguments))
            if fault is not None:
                code, message = fault
            elif problems:
                code, message = INVALID_INPUT, "; ".join(problems)
            else:
                try:
                    output = self.orders.functions()[tool](arguments)
                except ToolError as failed:
                    code, message = failed.code, failed.message
                else:
                    self.calls.append({"tool": tool, "arguments": arguments, "outcome": "ok"})
                    return types.CallToolResult(
                        content=[types.TextContent(type="text", text=json.dumps(output, ensure_ascii=False))],
                        structured_content=output,
                    )
            self.calls.append({"tool": tool, "arguments": arguments, "outcome": code})
        error = {"code": code, "message": message}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{code}: {message}")],
            structured_content=error,
            is_error=True,
        )


def build_app(upstream: Upstream | None = None, *, host: str = "127.0.0.1") -> Starlette:
    """The Starlette app: the MCP endpoint at ``/mcp`` (stateless, JSON answers: every request stands
    alone, as behind a load balancer) and the control routes."""
    upstream = upstream or Upstream()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tool_definitions(upstream.faults.schema_version)))

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if upstream.faults.latency_ms:
            await asyncio.sleep(upstream.faults.latency_ms / 1000)
        return upstream.call(params.name, dict(params.arguments or {}))

    async def control(request: Request) -> JSONResponse:
        try:
            settings = await request.json()
            if not isinstance(settings, dict):
                raise ValueError("a JSON object is expected")
            return JSONResponse(upstream.control(settings))
        except ValueError as exc:
            return JSONResponse({"code": "invalid_control", "detail": str(exc)}, status_code=400)

    async def calls(request: Request) -> JSONResponse:
        return JSONResponse({"counts": dict(upstream.counts), "calls": list(upstream.calls)})

    server: Server[Any] = Server("arbiter-demo-orders", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        host=host,
        custom_starlette_routes=[
            Route("/control", control, methods=["POST"]),
            Route("/control/calls", calls, methods=["GET"]),
        ],
    )


class UpstreamControl:
    """A client of the control routes of a server running elsewhere: ``url`` is its MCP endpoint."""

    def __init__(self, url: str):
        self.url = url
        self.base = url.rsplit(MCP_PATH, 1)[0]

    def control(self, **settings: Any) -> dict[str, Any]:
        """Set its faults (this module's docstring says which); the faults now in force."""
        response = httpx.post(f"{self.base}/control", json=settings, timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def calls(self) -> dict[str, Any]:
        """The calls that reached its tools: ``{"counts": {tool: n}, "calls": [{tool, arguments, outcome}]}``."""
        response = httpx.get(f"{self.base}/control/calls", timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def reset(self) -> None:
        self.control(reset=True)


async def _serve(host: str, port: int) -> None:
    # The socket is bound here so that ``--port 0`` is known before the URL is printed.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # asyncio turns Nagle off only on sockets whose proto is IPPROTO_TCP, and this one's is 0: without it
    # a keep-alive client waited for a delayed ACK between the answer's headers and body (40 ms a call).
    # Accepted connections inherit the option from the listening socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(build_app(host=host), log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if server.started:
        print(f"http://{host}:{bound}{MCP_PATH}", flush=True)
    await task


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The reference agent's order tools as an MCP server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port (the URL printed says which)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.host, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()

"""``/mcp``: the MCP gateway's one route, behind the agent API's authentication.

An ``AgentApi`` like every agent operation: the agent token (``Authorization: Bearer``) authenticates it,
the agent's rate limit applies, a missing or invalid token is ``401`` and a staff token ``403``
(problem+json, from the one handler). What is left is the MCP SDK's: the body goes unread by DRF's
parsers to the session manager (``agents.mcp.serving``), whose answer — JSON-RPC, or the SDK's own
HTTP refusals (a wrong content type is ``415``, a body it cannot parse a JSON-RPC parse error) — is
returned as it is. Only POST: a stateless server offers no stream to GET (``405``, as the protocol
allows), and has no session to DELETE.
"""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from mcp_types import INVALID_REQUEST
from rest_framework.request import Request

from agents.mcp.serving import runner
from decision_service.api.base import AgentApi, request_agent
from decision_service.api.parsers import PayloadTooLarge, body_too_large_detail
from decision_service.errors import DomainError

# Headers the SDK answers with that Django computes itself.
_HOP = frozenset({"content-length", "transfer-encoding", "connection"})


class GatewayBusy(DomainError):
    code = "mcp_gateway_busy"
    status = 503
    title = "The MCP gateway did not answer in time"


def asgi_scope(request: HttpRequest, *, agent: Any) -> dict[str, Any]:
    """The ASGI scope of ``request``, with the authenticated agent for the handlers
    (``agents.mcp.server``)."""
    headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in request.headers.items()]
    host, _, port = request.get_host().partition(":")
    client = request.META.get("REMOTE_ADDR") or "127.0.0.1"
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("latin-1", "replace"),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1", "replace"),
        "headers": headers,
        "client": (client, 0),
        "server": (host, int(port) if port.isdigit() else 0),
        "state": {},
        "arbiter.agent": agent,
    }


def jsonrpc_error(status: int, code: int, message: str) -> HttpResponse:
    """A JSON-RPC error answered before the SDK sees the request (it has no id to answer)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return HttpResponse(json.dumps(body), status=status, content_type="application/json")


class McpGatewayApi(AgentApi):
    def post(self, request: Request) -> HttpResponse:
        if not request.content_type.lower().startswith("application/json"):
            # The SDK answers a bare text 400; a client of JSON-RPC reads a JSON-RPC error better.
            return jsonrpc_error(415, INVALID_REQUEST, "Content-Type must be application/json.")
        limit = int(settings.ARBITER_MAX_REQUEST_BYTES)
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(body_too_large_detail(limit))
        body = request._request.read(limit + 1)  # DRF's parsers stay unused: the SDK reads the body
        if len(body) > limit:
            raise PayloadTooLarge(body_too_large_detail(limit))
        scope = asgi_scope(request._request, agent=request_agent(request))
        wait_s = settings.ARBITER_MCP_CALL_DEADLINE_S + settings.ARBITER_MCP_APPROVAL_WAIT_S + 30
        try:
            answer = runner.call(scope, bytes(body), wait_s=wait_s)
        except concurrent.futures.TimeoutError as exc:
            raise GatewayBusy(f"No answer within {wait_s:.0f} s; the call may still be running.") from exc
        response = HttpResponse(bytes(answer.body), status=answer.status, content_type="application/json")
        for name, value in answer.headers:
            if name.lower() not in _HOP:
                response[name] = value
        return response

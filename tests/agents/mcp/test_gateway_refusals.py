"""What ``/mcp`` answers a request that is wrong before any tool is judged: no token, a staff token, another
agent's session, a body that is not JSON-RPC, the wrong content type or method — each a problem+json (HTTP
level) or a JSON-RPC error (protocol level), never a server error."""

from __future__ import annotations

import json

import httpx
import pytest
from django.contrib.auth import get_user_model
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rules.governance.tokens import staff_token_create
from tests.support import agent_token
from tests.support.breakers import SERVED_HEADERS
from tests.support.mcp_gateway import call_tool, tool_names, tool_names_negotiated

MCP_HEADERS = {**SERVED_HEADERS, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def post(url: str, body: bytes | str, token: str | None, **headers: str) -> httpx.Response:
    sent = {**MCP_HEADERS, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return httpx.post(f"{url}/mcp", content=body, headers=sent, timeout=60)


def test_who_may_call_and_what_a_malformed_request_gets(gateway):
    url, token = gateway.url, gateway.token
    body = json.dumps(LIST)
    no_token = post(url, body, None)
    assert no_token.status_code == 401
    assert no_token.headers["Content-Type"] == "application/problem+json"
    assert no_token.json()["code"] == "not_authenticated"

    person = get_user_model().objects.create_user(username="ops", password="pw-ops-12345", is_staff=True)
    staff = post(url, body, staff_token_create(user=person))
    assert staff.status_code == 403 and staff.json()["code"] == "permission_denied"
    # An agent's token stays refused on staff endpoints.
    agent_on_staff = httpx.get(
        f"{url}/api/v1/tools/breakers", headers={**SERVED_HEADERS, "Authorization": f"Bearer {token}"}, timeout=60
    )
    assert agent_on_staff.status_code == 403

    listed = post(url, body, token)
    assert listed.status_code == 200, listed.text
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["orders.verify_phone"]

    malformed = post(url, "{not json", token)
    assert malformed.status_code < 500
    assert malformed.json()["error"]["code"] == -32700  # JSON-RPC parse error

    not_rpc = post(url, json.dumps({"hello": "world"}), token)
    assert not_rpc.status_code < 500 and "error" in not_rpc.json()

    wrong_type = post(url, body, token, **{"Content-Type": "text/plain"})
    assert wrong_type.status_code == 415 and "error" in wrong_type.json()

    bad_params = post(url, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"x": 1}}), token)
    assert bad_params.status_code < 500
    assert bad_params.json()["error"]["code"] == -32602  # invalid params: no tool name

    # Without a session, the read-only tool no state names: checked against its contract, then called.
    invalid = call_tool(url, token, "orders.verify_phone", {"phone": "abc"})
    assert invalid.is_error and invalid.structured_content["code"] == "invalid_tool_input"
    verified = call_tool(url, token, "orders.verify_phone", {"phone": "13800138000"})
    assert not verified.is_error and verified.structured_content == {"verified": True}
    restricted = call_tool(url, token, "orders.query_order", {"order_id": "SO20240002"})
    assert restricted.is_error and restricted.structured_content["code"] == "session_required"
    assert gateway.upstream.calls()["counts"] == {"verify_phone": 1}

    # An upstream slower than the contract's timeout_ms (1 s): TIMEOUT, as the contract's policy names it.
    gateway.upstream.control(latency_ms=3000)
    slow = call_tool(url, token, "orders.verify_phone", {"phone": "13800138000"})
    assert slow.is_error and slow.structured_content["code"] == "TIMEOUT", slow

    get = httpx.get(f"{url}/mcp", headers={**SERVED_HEADERS, "Authorization": f"Bearer {token}"}, timeout=60)
    assert get.status_code == 405


def test_a_session_of_another_agent_is_refused(gateway):
    url, token = gateway.url, gateway.token
    gateway.session("theirs")
    stranger = agent_token("other_bot", points=[])
    with pytest.raises(MCPError) as listed:
        tool_names(url, stranger, session="theirs")
    assert listed.value.code == -32602 and listed.value.data == {"code": "unknown_session"}
    with pytest.raises(MCPError) as called:
        call_tool(url, stranger, "orders.query_order", {"order_id": "SO20240002"}, session="theirs")
    assert called.value.data == {"code": "unknown_session"}
    # The owner sees its state's tools: the session named by the header, or by _meta on the request.
    assert tool_names(url, token, session="theirs") == ["orders.query_order"]
    by_meta = {**LIST, "params": {"_meta": {"arbiter.dev/session": "theirs"}}}
    listed = post(url, json.dumps(by_meta), token)
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["orders.query_order"]
    # A client that negotiates the newer per-request protocol gets the same answer.
    version, names = tool_names_negotiated(url, token, session="theirs")
    assert version not in HANDSHAKE_PROTOCOL_VERSIONS and names == ["orders.query_order"]

"""Upstream MCP servers the tests share: the demo with an ``orders`` server whose tools are the contracts
``orders.query_order`` (read only) and ``orders.update_order`` (write), and a ``kb`` server with a
read-only ``kb.search``."""

from __future__ import annotations

from tests.support.tools import DEMO_WITH_TOOLS

ORDER_ID = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{8}$"}

SERVERS_YAML = """\
mcp_servers:
  - name: orders
    description: The order service's MCP server.
    url: https://orders.internal.example/mcp
    auth: {kind: bearer, secret_env: ORDERS_MCP_TOKEN}
    timeout_ms: 5000
  - name: kb
    url: http://127.0.0.1:9/mcp
    tools_refresh_s: 300
"""

NAMESPACED_TOOLS = """\
  - name: orders.query_order
    input_schema:
      type: object
      properties:
        order_id: {type: string, pattern: "^[A-Z]{2}[0-9]{8}$"}
      required: [order_id]
    output_schema:
      type: object
      properties:
        status: {type: string}
    risk: read_only
  - name: orders.update_order
    input_schema:
      type: object
      properties:
        order_id: {type: string, pattern: "^[A-Z]{2}[0-9]{8}$"}
        address: {type: string}
      required: [order_id]
    risk: write
  - name: kb.search
    input_schema:
      type: object
      properties:
        q: {type: string}
    risk: read_only
"""


def with_servers(text: str = DEMO_WITH_TOOLS, servers: str = SERVERS_YAML, tools: str = NAMESPACED_TOOLS) -> str:
    """``text`` (a document with a ``tools:`` section last) with the namespaced tools and the servers."""
    assert "\ntools:\n" in text and "\nmcp_servers:" not in text
    return text.rstrip("\n") + "\n" + tools + "\n" + servers


DEMO_WITH_SERVERS = with_servers()

# The orders server's tools/list as its MCP server answers it, matching the contracts above.
ORDERS_TOOLS = [
    {
        "name": "query_order",
        "description": "Reads an order.",
        "inputSchema": {"type": "object", "properties": {"order_id": ORDER_ID}, "required": ["order_id"]},
        "outputSchema": {"type": "object", "properties": {"status": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "update_order",
        "inputSchema": {
            "type": "object",
            "properties": {"order_id": ORDER_ID, "address": {"type": "string"}},
            "required": ["order_id"],
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    },
]

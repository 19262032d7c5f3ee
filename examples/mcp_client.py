"""A generic MCP client for the command line, knowing nothing of Arbiter: the SDK's ``ClientSession`` over
streamable HTTP to any URL, with any headers. docs/mcp.md's demo points it at Arbiter's gateway.

    python -m examples.mcp_client URL [-H 'Name: value' …] list
    python -m examples.mcp_client URL [-H 'Name: value' …] call TOOL '{"arg": "value"}'

``list`` prints each tool's name, annotations and input schema; ``call`` prints the result: whether it is
an error, its ``structuredContent`` and its text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def _run(url: str, headers: dict[str, str], command: str, tool: str, arguments: dict[str, Any]) -> int:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        if command == "list":
            for listed in (await session.list_tools()).tools:
                hints = listed.annotations.model_dump(exclude_none=True, by_alias=True) if listed.annotations else {}
                print(f"{listed.name}  {json.dumps(hints)}\n    input: {json.dumps(listed.input_schema)}")
            return 0
        result = await session.call_tool(tool, arguments)
        assert isinstance(result, types.CallToolResult)
        text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
        shown = {"isError": result.is_error, "structuredContent": result.structured_content, "text": text}
        print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 1 if result.is_error else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("-H", "--header", action="append", default=[], help="'Name: value', repeatable")
    parser.add_argument("command", choices=["list", "call"])
    parser.add_argument("tool", nargs="?", default="")
    parser.add_argument("arguments", nargs="?", default="{}", help="the call's arguments, a JSON object")
    args = parser.parse_args(argv)
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {k.strip(): v.strip() for k, v in headers.items()}
    if args.command == "call" and not args.tool:
        parser.error("call needs a tool name")
    return asyncio.run(_run(args.url, headers, args.command, args.tool, json.loads(args.arguments)))


if __name__ == "__main__":
    sys.exit(main())

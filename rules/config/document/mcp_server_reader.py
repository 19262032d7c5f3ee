"""Checking the ``mcp_servers`` entries of a configuration document: each server's keys, then everything
``mcp_server_problems`` finds, each at its own line."""

from __future__ import annotations

from typing import Any

from rules.config.document.readers import Reader, clause
from rules.config.document.yamlload import Path
from rules.config.mcp_server_definitions import (
    MCP_SERVER_KEYS,
    MCP_SERVER_REQUIRED,
    canonical_mcp_server,
    mcp_server_problems,
)


class McpServerReader(Reader):
    """The MCP server part of the document checker."""

    def mcp_servers(self, items: list[Any]) -> list[dict[str, Any]]:
        servers: list[dict[str, Any]] = []
        first: dict[str, int] = {}
        for index, item in enumerate(items):
            path: Path = ("mcp_servers", index)
            record = self.mapping(item, path, MCP_SERVER_KEYS, MCP_SERVER_REQUIRED, what="an MCP server (a mapping)")
            if record is None:
                continue
            name = record.get("name")
            if isinstance(name, str) and name in first:
                line = self.y.line_of(("mcp_servers", first[name]))
                self.problem(
                    (*path, "name"), f"duplicate name '{name}': mcp_servers[{first[name]}] (line {line}) has it too"
                )
                continue
            if isinstance(name, str):
                first[name] = index
            if any(key not in record for key in MCP_SERVER_REQUIRED):
                continue
            problems = mcp_server_problems(record)
            for at, message in problems.items():
                self.problem((*path, *at), clause(message))
            if not problems and all(key in MCP_SERVER_KEYS for key in record):
                servers.append(canonical_mcp_server(record))
        return sorted(servers, key=lambda s: s["name"])

"""Upstream MCP servers: writes recording who and why, and what the gateway reads of them.

Writes go through ``audited_save`` / ``audited_delete`` and so through the configuration-change seam,
where the four-eyes gate holds back a change that redirects the calls of a server with a write or
destructive tool (``rules.governance.mcp_server_risk``).

What the gateway reads comes from the live revision, never from the tables: ``mcp_servers_live`` (the
servers, with their auth headers resolved from the environment) and ``mcp_tools_seen`` (which of an
upstream's tools its approved contracts do not cover). Both are per-process and cheap once a revision has
been read: the revision check is the engine cache's (``rules.config.runtime``), at most one indexed query
every ``ARBITER_REVISION_CHECK_SECONDS``.

A server whose secret's environment variable is not set is listed **disabled** (``enabled=False``,
``headers={}``, ``missing_secret`` naming the variable): calling it without its credentials would only
send unauthenticated requests upstream, so its tools are not offered until the variable is set and the
process restarted (environment variables are read per process).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rules.config.document.diff import same
from rules.config.mcp_server_definitions import canonical_auth
from rules.config.revisions import Actor, audited_delete, audited_save, config_change
from rules.config.runtime import engines
from rules.config.tools import mcp_tool_contract
from rules.models import McpServer

logger = logging.getLogger("arbiter.mcp")

# The fields of a contract an upstream's tools/list describes and the gateway holds it to.
DRIFT_FIELDS = ("input_schema", "output_schema", "risk")


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One upstream as the gateway calls it (from the live revision)."""

    name: str
    url: str
    headers: Mapping[str, str]  # auth headers resolved from the environment when read; {} for none
    timeout_ms: int
    tools_refresh_s: int
    enabled: bool
    # The environment variable the secret should come from when it is not set (the server is then
    # listed disabled); "" otherwise.
    missing_secret: str = field(default="")


def mcp_server_fill(server: McpServer, document: Mapping[str, Any]) -> McpServer:
    """Set a record's fields from a server in document shape (canonical or not)."""
    auth = document.get("auth") or {}
    server.name = document["name"]
    server.description = document.get("description", "")
    server.url = document["url"]
    server.auth_kind = auth.get("kind") or "none"
    server.auth_header = auth.get("header") or ""
    server.auth_secret_env = auth.get("secret_env") or ""
    if "timeout_ms" in document:
        server.timeout_ms = document["timeout_ms"]
    if "enabled" in document:
        server.enabled = document["enabled"]
    if "tools_refresh_s" in document:
        server.tools_refresh_s = document["tools_refresh_s"]
    return server


def mcp_server_store(*, server: McpServer, actor: Actor, reason: str) -> McpServer:
    """Validate and save ``server`` as it is (the admin's form, the YAML import)."""
    audited_save(server, actor=actor, reason=reason)
    return server


def mcp_server_save(*, user: Actor, reason: str, name: str, **fields: Any) -> McpServer:
    """Create the server ``name`` or update it with ``fields`` (document shape: ``url``, ``description``,
    ``auth`` as ``{kind, header, secret_env}``, ``timeout_ms``, ``enabled``, ``tools_refresh_s``); the fields
    not given keep their value (their default on a new server). One revision, or a change request
    (``ApprovalRequired``) when the change is high-risk."""
    with config_change(actor=user, reason=reason):
        server = McpServer.objects.filter(name=name).first() or McpServer(name=name)
        current = server.document() if server.pk else {"name": name, "url": ""}
        if "auth" in fields:
            fields = {**fields, "auth": canonical_auth(fields["auth"])}
        return mcp_server_store(server=mcp_server_fill(server, {**current, **fields}), actor=user, reason=reason)


def mcp_server_delete(*, user: Actor, reason: str, name: str) -> None:
    """Delete the server ``name`` (``McpServer.DoesNotExist`` when there is none); its tools' contracts stay."""
    audited_delete(McpServer.objects.get(name=name), actor=user, reason=reason)


def _spec(server: Mapping[str, Any]) -> McpServerSpec:
    auth = server.get("auth") or {"kind": "none"}
    headers: dict[str, str] = {}
    missing = ""
    if auth["kind"] != "none":
        secret = os.environ.get(auth["secret_env"], "")
        if not secret:
            missing = auth["secret_env"]
        elif auth["kind"] == "bearer":
            headers["Authorization"] = f"Bearer {secret}"
        else:
            headers[auth["header"]] = secret
    return McpServerSpec(
        name=server["name"],
        url=server["url"],
        headers=MappingProxyType(headers),
        timeout_ms=server["timeout_ms"],
        tools_refresh_s=server["tools_refresh_s"],
        enabled=bool(server["enabled"]) and not missing,
        missing_secret=missing,
    )


class _LiveServers:
    """The specs of one revision, built once per revision (and per value of the secrets' variables)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[object, tuple[str, ...]] | None = None
        self._specs: Mapping[str, McpServerSpec] = MappingProxyType({})

    def get(self) -> Mapping[str, McpServerSpec]:
        config = engines.current()
        servers = config.mcp_servers
        envs = tuple(os.environ.get(s["auth"].get("secret_env", ""), "") for s in servers.values())
        key = (config, envs)
        with self._lock:
            if self._key is not None and self._key[0] is config and self._key[1] == envs:
                return self._specs
        specs = {name: _spec(server) for name, server in sorted(servers.items())}
        for spec in specs.values():
            if spec.missing_secret:
                logger.warning(
                    "MCP server %s: the environment variable %s is not set; the server is disabled",
                    spec.name,
                    spec.missing_secret,
                )
        with self._lock:
            self._key, self._specs = key, MappingProxyType(specs)
        return self._specs


_live = _LiveServers()


def mcp_servers_live() -> Mapping[str, McpServerSpec]:
    """The upstream MCP servers of the live revision, by name (disabled ones too, ``enabled=False``)."""
    return _live.get()


def mcp_tool_drift(contract: Mapping[str, Any] | None, upstream: Mapping[str, Any]) -> str | None:
    """How an upstream tool (MCP wire form, its name already namespaced) differs from its approved contract
    (canonical document shape): ``"new"`` (no contract), ``"changed"`` (its input schema, output schema or the
    risk its annotations give differ), or None. Schemas are compared as JSON: key order never counts."""
    if contract is None:
        return "new"
    read = mcp_tool_contract(upstream)
    if any(not same(read.get(name), contract.get(name)) for name in DRIFT_FIELDS):
        return "changed"
    return None


def mcp_tools_seen(server: str, tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The (un-namespaced) names of the upstream ``server``'s tools (its ``tools/list`` result's ``tools``)
    that the gateway must not offer: those with no approved contract ``server.name``, and those that differ
    from it (``mcp_tool_drift``). Called at most once per ``tools_refresh_s`` per server per process."""
    contracts = engines.current().tools
    hidden = set()
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        full = f"{server}.{name}"
        compiled = contracts.get(full)
        if mcp_tool_drift(compiled.contract if compiled is not None else None, {**tool, "name": full}) is not None:
            hidden.add(name)
    return frozenset(hidden)

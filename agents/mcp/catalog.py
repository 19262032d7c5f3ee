"""What the gateway offers and to whom: the caller (agent, session), the tools of configured upstream
servers, the tools a session's state allows, and the operation id of a call. Sync Django reads, run on
the gateway's pool (``agents.mcp.serving.in_thread``).

- A tool is offered when the active revision has an approved contract named ``<server>.<tool>`` for a
  configured, enabled upstream server (``rules.config.mcp_servers``), and the upstream's own ``tools/list``
  does not hold it back (``mcp_tools_seen``: drift from the approved contract, or no contract at all).
- With a session: the tools its current state's actions name (``session_allowed_actions``, the list
  ``tool_call_check`` judges a call by). Without one: read-only tools no machine's state names at all.
- Operation ids: one the caller gives in ``_meta`` (``arbiter.dev/operation_id``); else, for a write or
  destructive tool, one derived from (agent, session, tool, the input's digest, the state visit) so that a
  model's identical call in the same visit is the same operation; read-only tools get a new one per call.
  A visit is numbered by the session's last move that was not an approval's: the moves into the human
  queue and back that a person's approval makes are one visit, so the repeated call finds its approval.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.errors import UnknownSession
from agents.sessions.models import Session, Transition, TransitionKind
from agents.sessions.reads import session_read
from agents.sessions.services import session_allowed_actions
from agents.tools.contracts import active_config, input_digest
from agents.tools.services import new_operation_id
from decision_service.principals import AgentPrincipal
from rules.config.mcp_servers import McpServerSpec, mcp_servers_live
from rules.engine.tools import CompiledTool
from rules.models import StateMachine

SESSION_HEADER = "arbiter-session"
# _meta keys, prefixed as MCP asks of keys that are not the protocol's own (a reverse-DNS-like label, "/").
META_SESSION = "arbiter.dev/session"
META_OPERATION = "arbiter.dev/operation_id"
META_ATTEMPT = "arbiter.dev/attempt"
OPERATION_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # as the tool-call API's (agents.tools.apis)
READ_ONLY = "read_only"


@dataclass(frozen=True, slots=True)
class Caller:
    agent: AgentPrincipal
    session_key: str | None


def server_of(tool: str) -> tuple[str, str] | None:
    """``orders.query_order`` → (``orders``, ``query_order``); None for a name without a server."""
    server, dot, bare = tool.partition(".")
    return (server, bare) if dot and server and bare else None


def upstream_servers() -> dict[str, McpServerSpec]:
    """The configured upstream servers that are enabled, by name."""
    return {name: spec for name, spec in mcp_servers_live().items() if spec.enabled}


def gateway_tools(
    held_back: Mapping[str, frozenset[str]], servers: Mapping[str, McpServerSpec]
) -> dict[str, CompiledTool]:
    """The approved contracts the gateway may offer anyone, by namespaced name (see the module docstring).
    ``held_back``: per server, the names ``mcp_tools_seen`` answered for its last ``tools/list``;
    ``servers``: ``upstream_servers()``, as the caller read it for ``held_back``."""
    offered: dict[str, CompiledTool] = {}
    for name, compiled in active_config().tools.items():
        found = server_of(name)
        if found is None or found[0] not in servers:
            continue
        if found[1] in held_back.get(found[0], frozenset()):  # mcp_tools_seen names the upstream's own
            continue
        offered[name] = compiled
    return offered


def session_for(caller: Caller) -> Session:
    """The caller's session, as last committed; ``UnknownSession`` for one this agent does not have."""
    key = caller.session_key or ""
    if "\x00" in key or len(key) > 128:  # no session id holds one; PostgreSQL cannot compare it
        raise UnknownSession(f"This agent has no session {key!r}.")
    session, _ = session_read(agent_id=caller.agent.pk, key=key)
    if session is None:
        raise UnknownSession(f"This agent has no session '{key}'.")
    return session


def unrestricted(tools: Mapping[str, CompiledTool]) -> dict[str, CompiledTool]:
    """The read-only tools no machine's state names: what a caller without a session may use."""
    named: set[str] = set()
    for actions in StateMachine.objects.values_list("actions", flat=True):
        for listed in (actions or {}).values():
            named.update(listed)
    return {n: t for n, t in tools.items() if t.risk == READ_ONLY and n not in named}


def offered(caller: Caller, tools: Mapping[str, CompiledTool]) -> list[CompiledTool]:
    """The tools ``caller`` may see now, in the state's order (with a session) or by name."""
    if caller.session_key is None:
        return [t for _, t in sorted(unrestricted(tools).items())]
    session = session_for(caller)
    return [tools[name] for name in session_allowed_actions(session) if name in tools]


def offered_now(
    caller: Caller, held_back: Mapping[str, frozenset[str]], servers: Mapping[str, McpServerSpec]
) -> list[CompiledTool]:
    """``offered`` of ``gateway_tools``, in one hop to the pool."""
    return offered(caller, gateway_tools(held_back, servers))


def state_visit(session: Session) -> int:
    """The session's last move that was not an approval's (0: none since it began)."""
    seq = (
        Transition.objects.filter(session_id=session.pk)
        .exclude(kind=TransitionKind.APPROVAL)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    return int(seq or 0)


def operation_id_for(caller: Caller, compiled: CompiledTool, arguments: Mapping[str, Any], given: str | None) -> str:
    """The call's operation id (see the module docstring). Only a derived one reads the session (its visit):
    ``UnknownSession`` for one this agent does not have."""
    if given:
        return given
    if compiled.risk == READ_ONLY:
        return new_operation_id()
    session = session_for(caller)
    parts = [str(caller.agent.pk), session.key, compiled.name, input_digest(arguments), str(state_visit(session))]
    return "mcp-" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:40]

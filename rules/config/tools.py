"""Writes to tool contracts, each recording who and why; and contracts read from, and written as, MCP tools.

Every write goes through ``audited_save`` / ``audited_delete`` and so through the configuration-change
seam, where the four-eyes gate holds a change to a write or destructive tool's schemas, error policy or
risk for approval (``rules.governance.risk``) — whether it comes from the admin, a revert, an import, the
staff API or the shell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rules.config.revisions import Actor, audited_delete, audited_save, config_change
from rules.config.tool_definitions import DEFAULT_TIMEOUT_MS, HANDOFF, canonical_tool
from rules.models import ToolContract

# Retry defaults an MCP tool's annotations imply: an idempotent tool may be retried after a transient
# failure; a tool that is not may have acted before it failed, so it is not retried unless staff say so.
MCP_TRANSIENT_CODES = ("RATE_LIMIT_EXCEEDED", "TIMEOUT", "UNAVAILABLE")


def tool_save(*, tool: ToolContract, actor: Actor, reason: str) -> ToolContract:
    audited_save(tool, actor=actor, reason=reason)
    return tool


def tool_delete(*, tool: ToolContract, actor: Actor, reason: str) -> None:
    audited_delete(tool, actor=actor, reason=reason)


def tool_fill(tool: ToolContract, document: Mapping[str, Any]) -> ToolContract:
    """Set a record's fields from a contract in document shape (canonical or not)."""
    tool.name = document["name"]
    tool.description = document.get("description", "")
    tool.input_schema = document["input_schema"]
    tool.output_schema = document.get("output_schema")
    tool.error_codes = [dict(e) for e in document.get("error_codes", [])]
    tool.on_exhausted = document.get("on_exhausted") or HANDOFF
    tool.timeout_ms = document.get("timeout_ms") or DEFAULT_TIMEOUT_MS
    tool.max_concurrent = document.get("max_concurrent")
    tool.circuit_breaker = document.get("circuit_breaker")
    tool.risk = document["risk"]
    tool.needs_approval_in = list(document.get("needs_approval_in", []))
    return tool


def mcp_tool_contract(mcp_tool: Mapping[str, Any]) -> dict[str, Any]:
    """A contract (document shape) from one tool of an MCP server's ``tools/list`` result.

    Annotations are hints (the MCP specification says so), read with the specification's defaults:
    ``readOnlyHint`` (default false) → ``read_only``; otherwise ``destructiveHint`` (default **true**) →
    ``destructive``, false → ``write``. ``idempotentHint`` (default false) → the transient codes are
    declared retryable (3 retries, exponential backoff), otherwise declared but not retried. A read-only
    tool is idempotent by nature.
    """
    annotations = mcp_tool.get("annotations") or {}
    if annotations.get("readOnlyHint", False):
        risk = "read_only"
    elif annotations.get("destructiveHint", True):
        risk = "destructive"
    else:
        risk = "write"
    idempotent = risk == "read_only" or bool(annotations.get("idempotentHint", False))
    contract: dict[str, Any] = {
        "name": mcp_tool["name"],
        "description": mcp_tool.get("description") or "",
        "input_schema": mcp_tool.get("inputSchema") or {"type": "object"},
        "error_codes": [{"code": code, "retryable": idempotent} for code in MCP_TRANSIENT_CODES],
        "risk": risk,
    }
    if mcp_tool.get("outputSchema") is not None:
        contract["output_schema"] = mcp_tool["outputSchema"]
    return canonical_tool(contract)


def mcp_tool_document(contract: Mapping[str, Any]) -> dict[str, Any]:
    """One contract as an MCP ``tools/list`` entry, its risk as annotations (the reverse of the above)."""
    risk = contract["risk"]
    retried = any(e.get("retryable") for e in contract.get("error_codes", []))
    entry: dict[str, Any] = {
        "name": contract["name"],
        "description": contract.get("description", ""),
        "inputSchema": contract["input_schema"],
    }
    if contract.get("output_schema") is not None:
        entry["outputSchema"] = contract["output_schema"]
    entry["annotations"] = {
        "readOnlyHint": risk == "read_only",
        "destructiveHint": risk == "destructive",
        "idempotentHint": risk == "read_only" or retried,
    }
    return entry


def mcp_tool_adopted(contract: Mapping[str, Any] | None, mcp_tool: Mapping[str, Any]) -> dict[str, Any]:
    """The contract (canonical document shape) that takes on what an MCP ``tools/list`` entry says of a
    tool: its description, schemas and the risk its annotations give. What MCP does not describe — error
    codes beyond the defaults, on_exhausted, limits, breaker, approval states — is kept from ``contract``
    (an existing contract, canonical); with none, the contract is made from the entry alone."""
    read = mcp_tool_contract(mcp_tool)
    if contract is None:
        return read
    adopted = {**contract, "description": read.get("description", ""), "input_schema": read["input_schema"]}
    adopted["output_schema"] = read.get("output_schema")
    adopted["risk"] = read["risk"]
    return canonical_tool(adopted)


def tools_import_mcp(*, result: Mapping[str, Any], actor: Actor, reason: str) -> list[ToolContract]:
    """Create or update a contract for every tool of a ``tools/list`` result, in one change (one revision,
    or one change request when it changes a write or destructive tool's schemas, error policy or risk).

    What MCP does not describe — error codes beyond the defaults, on_exhausted, limits, breaker, approval
    states — is kept as it is on an existing contract; only what the server says is taken from it.
    """
    saved = []
    with config_change(actor=actor, reason=reason):
        for mcp_tool in result.get("tools", []):
            tool = ToolContract.objects.filter(name=mcp_tool["name"]).first()
            if tool is None:
                tool = tool_fill(ToolContract(), mcp_tool_adopted(None, mcp_tool))
            else:
                adopted = mcp_tool_adopted(canonical_tool(tool.document()), mcp_tool)
                tool.description = adopted.get("description", "")
                tool.input_schema = adopted["input_schema"]
                tool.output_schema = adopted.get("output_schema")
                tool.risk = adopted["risk"]
            saved.append(tool_save(tool=tool, actor=actor, reason=reason))
    return saved

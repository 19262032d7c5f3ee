"""What the gateway answers a ``tools/call``: the upstream's result, or a tool error the model can read.

A refusal or a give-up is a ``CallToolResult`` with ``isError: true`` — MCP's way of telling the model
something it can act on — whose text says why (for an invalid input, every JSON pointer with the schema's
message) and whose ``structuredContent`` is ``{code, …}`` with the refusal's stable code (the same as the
tool-call API's problem+json ``code``) and what else it carries (``operation_id``, ``retry_after_ms``,
``errors``, ``allowed_actions``, the session's ``state``). The table is in docs/mcp.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from agents.mcp.catalog import META_ATTEMPT, META_OPERATION
from decision_service.errors import DomainError

# What a refusal's extra may carry that the model can use; the session object itself is too much.
_KEPT = ("operation_id", "retry_after_ms", "waiting_operation_id", "allowed_actions", "attempts", "handed_off")

APPROVAL_WAIT = (
    "The call waits for a person's approval; call again with the same input once a person has decided "
    "(operation {operation_id})."
)


def _meta(operation_id: str | None, attempt: int | None = None) -> dict[str, Any] | None:
    if operation_id is None:
        return None
    meta: dict[str, Any] = {META_OPERATION: operation_id}
    if attempt is not None:
        meta[META_ATTEMPT] = attempt
    return meta


def tool_error(code: str, text: str, *, operation_id: str | None = None, **more: Any) -> types.CallToolResult:
    structured = {"code": code, **{k: v for k, v in more.items() if v is not None}}
    if operation_id is not None:
        structured["operation_id"] = operation_id
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=True,
        _meta=_meta(operation_id),
    )


def refusal(error: DomainError, *, operation_id: str | None) -> types.CallToolResult:
    """A refusal of the tool-call policy (``agents.tools.errors``, ``agents.errors``) as a tool error."""
    extra: Mapping[str, Any] = error.extra or {}
    operation_id = extra.get("operation_id") or operation_id
    more: dict[str, Any] = {k: extra[k] for k in _KEPT if k in extra and k != "operation_id"}
    session = extra.get("session")
    if isinstance(session, Mapping) and "state" in session:
        more["state"] = session["state"]
    if error.errors:
        more["errors"] = error.errors
    text = error.detail
    if error.code == "awaiting_approval":
        text = APPROVAL_WAIT.format(operation_id=operation_id)
    return tool_error(error.code, text, operation_id=operation_id, **more)


def succeeded(result: types.CallToolResult, *, operation_id: str | None, attempt: int | None) -> types.CallToolResult:
    """The upstream's result as the model gets it, with the operation id in ``_meta``."""
    meta = {**(result.meta or {}), **(_meta(operation_id, attempt) or {})}
    return result.model_copy(update={"meta": meta or None})


def gave_up(
    code: str, message: str, answer: Mapping[str, Any], upstream: types.CallToolResult | None
) -> types.CallToolResult:
    """The policy gave up on the call (``next: give_up``): the upstream's own words when it had any, and the
    state the session moved to (``on_exhausted``)."""
    operation_id = answer.get("operation_id")
    session = answer.get("session") or {}
    state = session.get("state") if isinstance(session, Mapping) else None
    reason = message or code
    text = f"The call failed with {code} and is not retried: {reason}"
    if state:
        text += f" (the conversation is now in '{state}')."
    structured: dict[str, Any] = {"attempt": answer.get("attempt"), "state": state}
    if upstream is not None and isinstance(upstream.structured_content, Mapping):
        structured["upstream"] = dict(upstream.structured_content)
    return tool_error(code, text, operation_id=operation_id, **structured)

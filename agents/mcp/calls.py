"""A governed ``tools/call``: the tool-call policy's check, the forward to the upstream, the result, and
the retries the policy asks for, within the call's deadline. Nothing of the policy is decided here: the
check is ``agents.tools.services.tool_call_check`` and the judgement of each attempt
``agents.tools.results.tool_call_result`` (whitelist, input schema, retry lease, breaker, concurrency,
approval, output schema, error policy, ``on_exhausted``, the timeline) — this module only carries out
their answers.

Deadlines: each attempt has the time its check gave it (the contract's ``timeout_ms``), cut to what is
left of the whole call's ``ARBITER_MCP_CALL_DEADLINE_S``. A retry whose wait would pass the deadline is
not waited for: the answer is a tool error (``retry_later``) with the operation id, and the same call
made again continues the same operation once its wait is over. A call waiting for a person's approval is
asked again every quarter second for at most ``ARBITER_MCP_APPROVAL_WAIT_S`` (0: answered at once).

A caller without a session may call the read-only tools no state names: their input and output are checked
against the contract and an open breaker refuses them, but nothing is recorded (there is no session to record an
attempt against, and no retry).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.shared.exceptions import MCPError

from agents.errors import UnknownSession
from agents.mcp import answers, catalog
from agents.mcp.threads import in_thread
from agents.mcp.upstreams import Forwarded, held_back, held_back_known, upstream
from agents.tools import gate
from agents.tools.contracts import pointer_errors
from agents.tools.errors import CircuitOpen, InvalidToolInput
from agents.tools.results import tool_call_result
from agents.tools.services import Started, tool_call_check
from decision_service import metrics
from decision_service.errors import DomainError
from rules.config.mcp_servers import McpServerSpec
from rules.engine.tools import CompiledTool

APPROVAL_POLL_S = 0.25
AWAITING_APPROVAL = "awaiting_approval"
RETRY_IN_PROGRESS = "retry_in_progress"


def _check(
    caller: catalog.Caller,
    compiled: CompiledTool,
    arguments: Mapping[str, Any],
    given: str | None,
    operation_id: str,
) -> tuple[str, Started | DomainError]:
    """The call's operation id (derived on the first check) and the policy's check in the state the session
    is in once locked (no state is named by an MCP caller, so none is read beforehand)."""
    try:
        operation_id = operation_id or catalog.operation_id_for(caller, compiled, arguments, given)
        started = tool_call_check(
            agent=caller.agent,
            session_id=caller.session_key or "",
            tool=compiled.name,
            input=arguments,
            expected_state=None,
            operation_id=operation_id,
        )
    except DomainError as refused:
        return operation_id, refused
    return operation_id, started


@dataclass(frozen=True, slots=True)
class _Due:
    """An upstream's ``tools/list`` is due to be read again (on the loop) before the tool can be judged."""

    servers: Mapping[str, McpServerSpec]


@dataclass(frozen=True, slots=True)
class _Prepared:
    compiled: CompiledTool | None  # None: the gateway offers no such tool
    spec: McpServerSpec | None
    operation_id: str
    checked: Started | DomainError | None  # None: a call without a session that may go ahead


def _prepare(
    caller: catalog.Caller,
    name: str,
    arguments: Mapping[str, Any],
    given: str | None,
    held: Mapping[str, frozenset[str]] | None,
) -> _Prepared | _Due:
    """Everything a call needs before its forward, in one hop to the pool (each hop costs a thread switch and
    a connection taken from the pool): the configured servers, the tools offered, the first check."""
    servers = catalog.upstream_servers()
    if held is None and (held := held_back_known(servers)) is None:
        return _Due(servers)
    compiled = catalog.gateway_tools(held, servers).get(name)
    if compiled is None:
        return _Prepared(None, None, "", None)
    server, _ = catalog.server_of(compiled.name) or ("", compiled.name)
    spec = servers[server]  # gateway_tools offers only the tools of these servers
    if caller.session_key is None:
        return _Prepared(compiled, spec, "", _sessionless_check(compiled, arguments))
    operation_id, checked = _check(caller, compiled, arguments, given, "")
    return _Prepared(compiled, spec, operation_id, checked)


def _result(caller: catalog.Caller, operation_id: str, forwarded: Forwarded) -> dict[str, Any]:
    if forwarded.code is None:
        result = forwarded.result
        assert result is not None
        output: Any = result.structured_content
        if output is None:
            output = [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]
        return tool_call_result(
            agent=caller.agent, operation_id=operation_id, output=output, duration_ms=forwarded.duration_ms
        )
    error = {"code": forwarded.code, "message": forwarded.message[:2000]}
    return tool_call_result(
        agent=caller.agent, operation_id=operation_id, error=error, duration_ms=forwarded.duration_ms
    )


class SessionRequired(DomainError):
    code = "session_required"
    status = 422
    title = "The tool is called within a session"


def _sessionless_check(compiled: CompiledTool, arguments: Mapping[str, Any]) -> DomainError | None:
    if compiled.name not in catalog.unrestricted({compiled.name: compiled}):
        return SessionRequired(
            f"'{compiled.name}' is called only within a conversation: name the session "
            f"(the {catalog.SESSION_HEADER} header, or _meta['{catalog.META_SESSION}'])."
        )
    problems = compiled.input_errors(dict(arguments))
    if problems:
        errors = pointer_errors(problems)
        detail = f"The input of '{compiled.name}' does not match its contract: " + "; ".join(
            f"{pointer or '(the input)'}: {', '.join(messages)}" for pointer, messages in errors.items()
        )
        return InvalidToolInput(detail + ".", errors=errors)
    breaker = compiled.contract.get("circuit_breaker")
    if gate.breaker_state(compiled.name, breaker=breaker) == gate.OPEN:
        return CircuitOpen(f"The circuit breaker of {compiled.name} is open.")
    return None


async def governed_call(
    caller: catalog.Caller, name: str, arguments: Mapping[str, Any], given: str | None
) -> types.CallToolResult:
    """Answer one ``tools/call`` of ``name`` (see the module docstring); ``MCPError`` for a tool the gateway
    does not offer at all."""
    prepared = await in_thread(_prepare, caller, name, arguments, given, None)
    if isinstance(prepared, _Due):
        prepared = await in_thread(_prepare, caller, name, arguments, given, await held_back(prepared.servers))
    assert isinstance(prepared, _Prepared)
    if prepared.compiled is None:
        metrics.mcp_call_answered(tool="unknown", outcome="unknown_tool")
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
    result = await _governed(caller, prepared, arguments, given)
    outcome = "ok" if not result.is_error else str((result.structured_content or {}).get("code", "error"))
    metrics.mcp_call_answered(tool=name, outcome=outcome)
    return result


async def _governed(
    caller: catalog.Caller, prepared: _Prepared, arguments: Mapping[str, Any], given: str | None
) -> types.CallToolResult:
    compiled, spec = prepared.compiled, prepared.spec
    assert compiled is not None and spec is not None
    _, bare = catalog.server_of(compiled.name) or ("", compiled.name)
    client = upstream(spec)
    if caller.session_key is None:
        if isinstance(prepared.checked, DomainError):
            return answers.refusal(prepared.checked, operation_id=None)
        timeout_ms = int(compiled.contract.get("timeout_ms") or 0) or 10_000  # as the check's attempts
        forwarded = await client.forward(bare, arguments, timeout_s=timeout_ms / 1000, declared=compiled.error_codes)
        if forwarded.code is not None:
            return answers.tool_error(forwarded.code, forwarded.message or forwarded.code)
        assert forwarded.result is not None
        if problems := compiled.output_errors(forwarded.result.structured_content):
            detail = "; ".join(f"{p.pointer or '(the output)'}: {p.message}" for p in problems)
            return answers.tool_error("output_invalid", f"The upstream's answer does not match the contract: {detail}")
        return answers.succeeded(forwarded.result, operation_id=None, attempt=None)
    now = time.monotonic()
    deadline = now + settings.ARBITER_MCP_CALL_DEADLINE_S
    approval_until = now + settings.ARBITER_MCP_APPROVAL_WAIT_S
    assert prepared.checked is not None
    operation_id, checked = prepared.operation_id, prepared.checked
    while True:
        if isinstance(checked, UnknownSession):
            raise unknown_session(checked)
        if isinstance(checked, DomainError):
            wait = _wait_before_asking_again(checked, operation_id, approval_until, deadline)
            if wait is None:
                return answers.refusal(checked, operation_id=operation_id or None)
            await asyncio.sleep(wait)
            operation_id, checked = await in_thread(_check, caller, compiled, arguments, given, operation_id)
            continue
        left = deadline - time.monotonic()
        forwarded = await client.forward(
            bare, arguments, timeout_s=min(checked.timeout_ms / 1000, max(left, 0.001)), declared=compiled.error_codes
        )
        answer = await in_thread(_result, caller, operation_id, forwarded)
        step = answer.get("next")
        if step == "done":
            assert forwarded.result is not None
            return answers.succeeded(forwarded.result, operation_id=operation_id, attempt=answer.get("attempt"))
        if step == "retry":
            wait_s = int(answer.get("retry_after_ms") or 0) / 1000
            if time.monotonic() + wait_s >= deadline:
                return answers.tool_error(
                    "retry_later",
                    f"The call failed with {forwarded.code} and may be retried in {answer.get('retry_after_ms')} ms, "
                    "after this call's deadline; call again with the same input to go on.",
                    operation_id=operation_id,
                    retry_after_ms=answer.get("retry_after_ms"),
                    failed_with=forwarded.code,
                )
            await asyncio.sleep(wait_s)
            operation_id, checked = await in_thread(_check, caller, compiled, arguments, given, operation_id)
            continue
        return answers.gave_up(forwarded.code or "output_invalid", forwarded.message, answer, forwarded.result)


def unknown_session(refused: UnknownSession) -> MCPError:
    """A session the agent does not have is the request's fault, not the model's: a JSON-RPC error."""
    return MCPError(types.INVALID_PARAMS, refused.detail, data={"code": refused.code})


def _wait_before_asking_again(
    refused: DomainError, operation_id: str, approval_until: float, deadline: float
) -> float | None:
    """How long to wait before the check is asked again, or None to answer the refusal now: a call
    waiting for a person within the approval wait; this very operation's own retry wait."""
    now = time.monotonic()
    if refused.code == AWAITING_APPROVAL and now + APPROVAL_POLL_S < approval_until:
        return APPROVAL_POLL_S
    if refused.code == RETRY_IN_PROGRESS and refused.extra.get("waiting_operation_id") in (None, operation_id):
        wait = int(refused.extra.get("retry_after_ms") or 0) / 1000
        return wait if now + wait < deadline else None
    return None

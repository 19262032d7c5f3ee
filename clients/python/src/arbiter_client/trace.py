"""Events a runtime reports about its own turn (``POST /api/v1/sessions/<id>/trace``), built here.

Attribute names are the OpenTelemetry GenAI semantic conventions' (``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, …), so an event lines up with the runtime's own spans. Every event gets an
``event_id`` unless given one: a report lost on the way is sent again and recorded once.
"""

from __future__ import annotations

import uuid
from typing import Any


def _event_id(given: str | None) -> str:
    return given or uuid.uuid4().hex


def llm_call_event(
    *,
    model: str,
    prompt_version: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    latency_ms: int | None = None,
    status: str = "ok",
    point: str | None = None,
    provider: str | None = None,
    operation: str = "chat",
    response_model: str | None = None,
    error_type: str | None = None,
    input_messages: Any = None,
    output_messages: Any = None,
    turn_id: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """One ``llm_call``. ``input_messages`` / ``output_messages`` (the raw prompt and answer) are kept by
    the service only when ``point`` names a point whose ``store_raw_output`` is on."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation, "gen_ai.request.model": model}
    optional = {
        "gen_ai.provider.name": provider,
        "gen_ai.response.model": response_model,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "error.type": error_type,
        "gen_ai.input.messages": input_messages,
        "gen_ai.output.messages": output_messages,
    }
    attributes.update({k: v for k, v in optional.items() if v is not None})
    event: dict[str, Any] = {"type": "llm_call", "event_id": _event_id(event_id), "status": status}
    extra = {"prompt_version": prompt_version, "latency_ms": latency_ms, "point": point, "turn_id": turn_id}
    event.update({k: v for k, v in extra.items() if v is not None})
    event["attributes"] = attributes
    return event


def tool_event(
    tool: str,
    *,
    duration_ms: int | None = None,
    error_code: str | None = None,
    handled: bool = False,
    message: str | None = None,
    turn_id: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """A tool the runtime called without Arbiter: ``tool_invocation`` (``status`` error when it gave an
    ``error_code``), or with ``handled=True`` the ``error_handled`` that followed its failure."""
    if handled:
        if error_code is None:
            raise ValueError("an error_handled event needs its error_code")
        event: dict[str, Any] = {"type": "error_handled", "tool": tool, "error_code": error_code}
        if message:
            event["message"] = message
    else:
        event = {"type": "tool_invocation", "tool": tool, "status": "error" if error_code else "ok"}
        if error_code:
            event["error_code"] = error_code
    event["event_id"] = _event_id(event_id)
    extra = {"duration_ms": duration_ms, "turn_id": turn_id}
    event.update({k: v for k, v in extra.items() if v is not None})
    return event

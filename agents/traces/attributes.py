"""What a reported event may carry: its fields by type and its attributes under their OpenTelemetry names.

Attribute names follow the OpenTelemetry GenAI semantic conventions (``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, …) and the general ``error.type``, so an event lines up with the
runtime's own spans. Only the names listed here are accepted, each with its type: a misspelt name is an
error, not a silently kept key. ``event_problems`` is a pure function (field → message), used by the API's
serializer and by the service alike.

The model's raw input and output (``gen_ai.input.messages``, ``gen_ai.output.messages``, which the
conventions make opt-in too) are stored only when the event names a decision point whose
``store_raw_output`` is on (``agents.traces.services``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

TYPES = ("llm_call", "tool_invocation", "error_handled")
STATUSES = ("ok", "error")
ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
ID_MESSAGE = "1 to 64 letters, digits, _ . : or -."
TEXT_MAX = 256  # characters of a text attribute
RAW_MAX = 16_000  # characters of a raw input or output (its JSON text when it is not a string)
LIST_MAX = 16
DURATION_MAX_MS = 86_400_000  # a day
TOKENS_MAX = 100_000_000

RAW = frozenset({"gen_ai.input.messages", "gen_ai.output.messages"})
_TEXT, _INT, _NUMBER, _TEXTS, _RAW = "text", "int", "number", "texts", "raw"
_LLM: dict[str, str] = {
    "gen_ai.operation.name": _TEXT,
    "gen_ai.provider.name": _TEXT,
    "gen_ai.system": _TEXT,  # the older name of gen_ai.provider.name, still emitted by many libraries
    "gen_ai.request.model": _TEXT,
    "gen_ai.response.model": _TEXT,
    "gen_ai.response.id": _TEXT,
    "gen_ai.response.finish_reasons": _TEXTS,
    "gen_ai.usage.input_tokens": _INT,
    "gen_ai.usage.output_tokens": _INT,
    "gen_ai.request.max_tokens": _INT,
    "gen_ai.request.temperature": _NUMBER,
    "gen_ai.request.top_p": _NUMBER,
    "gen_ai.conversation.id": _TEXT,
    "server.address": _TEXT,
    "error.type": _TEXT,
    "gen_ai.input.messages": _RAW,
    "gen_ai.output.messages": _RAW,
}
_TOOL: dict[str, str] = {
    "gen_ai.tool.call.id": _TEXT,
    "gen_ai.tool.type": _TEXT,
    "server.address": _TEXT,
    "error.type": _TEXT,
}
ATTRIBUTES: dict[str, dict[str, str]] = {"llm_call": _LLM, "tool_invocation": _TOOL, "error_handled": _TOOL}
# The event's own fields beyond type, event_id, turn_id, status, point and attributes, by type.
FIELDS: dict[str, frozenset[str]] = {
    "llm_call": frozenset({"prompt_version", "latency_ms"}),
    "tool_invocation": frozenset({"tool", "duration_ms", "error_code"}),
    "error_handled": frozenset({"tool", "duration_ms", "error_code", "message"}),
}
COMMON = frozenset({"type", "event_id", "turn_id", "status", "point", "attributes"})
ALL_FIELDS = COMMON | frozenset().union(*FIELDS.values())


def _value_problem(kind: str, value: Any) -> str | None:
    if kind == _TEXT:
        if not isinstance(value, str):
            return "A string is required."
        if "\x00" in value:  # PostgreSQL cannot store it in text or JSON
            return "No NUL characters."
        return f"At most {TEXT_MAX} characters." if len(value) > TEXT_MAX else None
    if kind == _INT:
        if isinstance(value, bool) or not isinstance(value, int):
            return "An integer is required."
        return None if 0 <= value <= TOKENS_MAX else f"From 0 to {TOKENS_MAX}."
    if kind == _NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "A number is required."
        return None if math.isfinite(value) else "A finite number is required."
    if kind == _TEXTS:
        if not isinstance(value, list) or len(value) > LIST_MAX:
            return f"A list of at most {LIST_MAX} strings is required."
        return next((p for v in value if (p := _value_problem(_TEXT, v))), None)
    if isinstance(value, str):  # raw
        if "\x00" in value:
            return "No NUL characters."
        return f"At most {RAW_MAX} characters." if len(value) > RAW_MAX else None
    if not isinstance(value, list | dict):
        return "A string, or the messages as a list or an object, is required."
    return None  # its JSON text is measured by the service, which writes it


def attribute_problems(event_type: str, attributes: Any) -> dict[str, str]:
    """``attributes.<name>`` → what is wrong with it, for an event of ``event_type``."""
    if not isinstance(attributes, Mapping):
        return {"attributes": "An object is required."}
    known = ATTRIBUTES.get(event_type, {})
    problems: dict[str, str] = {}
    for name, value in attributes.items():
        kind = known.get(name)
        if kind is None:
            problems[f"attributes.{name}"] = f"Not an attribute of {event_type} events."
        elif problem := _value_problem(kind, value):
            problems[f"attributes.{name}"] = problem
    if event_type == "llm_call" and "gen_ai.request.model" not in attributes:
        problems["attributes.gen_ai.request.model"] = "The model asked is required."
    return problems


def event_problems(event: Mapping[str, Any]) -> dict[str, str]:
    """Field → what is wrong with one reported event (unknown fields, a field of another type, the
    attributes, the status of an ``error_handled``); empty when it may be recorded."""
    event_type = event.get("type")
    if event_type not in TYPES:
        return {"type": f"One of {', '.join(TYPES)}."}
    problems = {name: "Unknown field." for name in sorted(set(event) - ALL_FIELDS)}
    for name in sorted(set(event) & (ALL_FIELDS - COMMON - FIELDS[event_type])):
        problems[name] = f"Not a field of {event_type} events."
    problems.update(attribute_problems(event_type, event.get("attributes", {})))
    if event_type == "tool_invocation" and not event.get("tool"):
        problems["tool"] = "The tool called is required."
    if event_type == "error_handled":
        if not event.get("error_code"):
            problems["error_code"] = "The error handled is required."
        if event.get("status", "error") != "error":
            problems["status"] = "An error_handled event's status is error."
    return problems

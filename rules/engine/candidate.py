"""Read a candidate out of an LLM's raw text: JSON, possibly fenced, possibly wrapped in prose."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rules.engine.model import Candidate

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


# The same limits a structured candidate is held to by the API.
MAX_DECISION_CHARS = 128
MAX_REASON_CHARS = 2000


def _storable(text: str) -> bool:
    """No NUL (PostgreSQL cannot store it) and no unpaired surrogate (not encodable as UTF-8)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CandidateParseError(ValueError):
    """The text holds no usable candidate; ``str(exc)`` says why, for the anomaly record."""


def _objects(text: str) -> list[Any]:
    """Every JSON object embedded in the text, fenced blocks first, in order of appearance."""
    found: list[Any] = []
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        index = source.find("{")
        while index != -1:
            try:
                value, end = _DECODER.raw_decode(source, index)
            except json.JSONDecodeError:
                index = source.find("{", index + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            index = source.find("{", end)
    return found


def parse_candidate(raw: str, *, decision_keys: tuple[str, ...] = ("decision", "intent", "outcome")) -> Candidate:
    """Extract and validate ``{"decision": str, "confidence": number in [0, 1], "reason"?: str}``.

    Models often say ``intent`` instead of ``decision`` (the prompt in the field asks for one), so
    either is read.
    """
    objects = _objects(raw)
    if not objects:
        raise CandidateParseError("no JSON object found in the model output")
    problems: list[str] = []
    for obj in objects:
        key = next((k for k in decision_keys if k in obj), None)
        if key is None:
            problems.append("the JSON has no decision field")
            continue
        decision = obj[key]
        confidence = obj.get("confidence")
        reason = obj.get("reason", "")
        if not isinstance(decision, str) or not decision.strip():
            problems.append("decision is not a non-empty string")
            continue
        if len(decision.strip()) > MAX_DECISION_CHARS or not _storable(decision):
            problems.append("decision is too long or holds characters that cannot be stored")
            continue
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            problems.append("confidence is not a number")
            continue
        if not math.isfinite(confidence) or not 0 <= confidence <= 1:
            problems.append("confidence is outside [0, 1]")
            continue
        if reason is None:
            reason = ""
        if not isinstance(reason, str):
            problems.append("reason is not a string")
            continue
        if len(reason) > MAX_REASON_CHARS or not _storable(reason):
            problems.append("reason is too long or holds characters that cannot be stored")
            continue
        return Candidate(decision=decision.strip(), confidence=float(confidence), reason=reason)
    raise CandidateParseError(problems[0])

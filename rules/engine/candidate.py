"""Read a candidate out of an LLM's raw text: JSON, possibly fenced, possibly wrapped in prose."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rules.engine.model import Candidate

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# Every JSON integer becomes a float: confidence is the only number read, and it is used as a float.
# int() refuses more than 4,300 digits with a ValueError; float() takes any length (as inf if it must).
_DECODER = json.JSONDecoder(parse_int=float)
# Where a JSON object can start: raw_decode would fail at once anywhere else.
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
# Places that look like an object but hold none before the search stops (an honest answer has a few).
MAX_FAILED_ATTEMPTS = 64


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
    """Every JSON object embedded in the text, fenced blocks first, in order of appearance.

    The text is the model's, so it may be anything: objects nested past the decoder's recursion limit,
    integers of thousands of digits, a brace on every character. An object is looked for only where
    one can start (a brace, then a quote or the closing brace), and the search gives up after
    ``MAX_FAILED_ATTEMPTS`` places that hold none: each attempt costs at most one pass over the text,
    so the whole search stays linear in its length rather than quadratic.
    """
    found: list[Any] = []
    failures = 0
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        start = _OBJECT_START.search(source)
        while start is not None:
            try:
                value, end = _DECODER.raw_decode(source, start.start())
            except (ValueError, RecursionError):
                # Not JSON from here (ValueError covers JSONDecodeError), or nested deeper than the
                # decoder recurses: no candidate starts at this brace; look further on.
                failures += 1
                if failures >= MAX_FAILED_ATTEMPTS:
                    return found
                start = _OBJECT_START.search(source, start.start() + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            start = _OBJECT_START.search(source, end)
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

"""Read an LLM's candidate the way the server reads ``candidate_raw``.

The same rules as the server's parser (rules/engine/candidate.py; tests/client checks both on the same
inputs): JSON objects are looked for in fenced blocks first, then in the whole text, where an object can
start; the first object with a decision key (``decision``, ``intent`` or ``outcome``), a non-empty
decision of at most 128 characters, a finite confidence in [0, 1] (not a boolean) and a string reason of
at most 2,000 characters wins. Giving the agent the parsed candidate lets it decide locally whether to
ask the model again, and send ``candidate=`` rather than ``candidate_raw=``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypedDict

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder(parse_int=float)
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
MAX_FAILED_ATTEMPTS = 64
MAX_DECISION_CHARS = 128
MAX_REASON_CHARS = 2000
DECISION_KEYS = ("decision", "intent", "outcome")


class Candidate(TypedDict):
    decision: str
    confidence: float
    reason: str


class CandidateParseError(ValueError):
    """No usable candidate; ``str(exc)`` says why (the server records the same reason as an anomaly)."""


def _storable(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _objects(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    failures = 0
    for source in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        start = _OBJECT_START.search(source)
        while start is not None:
            try:
                value, end = _DECODER.raw_decode(source, start.start())
            except (ValueError, RecursionError):
                failures += 1
                if failures >= MAX_FAILED_ATTEMPTS:
                    return found
                start = _OBJECT_START.search(source, start.start() + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            start = _OBJECT_START.search(source, end)
    return found


def _problem(obj: Mapping[str, Any]) -> str | Candidate:
    key = next((k for k in DECISION_KEYS if k in obj), None)
    if key is None:
        return "the JSON has no decision field"
    decision, confidence, reason = obj[key], obj.get("confidence"), obj.get("reason", "")
    if not isinstance(decision, str) or not decision.strip():
        return "decision is not a non-empty string"
    if len(decision.strip()) > MAX_DECISION_CHARS or not _storable(decision):
        return "decision is too long or holds characters that cannot be stored"
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return "confidence is not a number"
    if not math.isfinite(confidence) or not 0 <= confidence <= 1:
        return "confidence is outside [0, 1]"
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        return "reason is not a string"
    if len(reason) > MAX_REASON_CHARS or not _storable(reason):
        return "reason is too long or holds characters that cannot be stored"
    return Candidate(decision=decision.strip(), confidence=float(confidence), reason=reason)


def parse_candidate(output: str | Mapping[str, Any]) -> Candidate:
    """The candidate in a model's output (its text, or a JSON object it returned already parsed)."""
    objects: list[Mapping[str, Any]] = [output] if isinstance(output, Mapping) else list(_objects(output))
    if not objects:
        raise CandidateParseError("no JSON object found in the model output")
    problems: list[str] = []
    for obj in objects:
        found = _problem(obj)
        if isinstance(found, str):
            problems.append(found)
            continue
        return found
    raise CandidateParseError(problems[0])

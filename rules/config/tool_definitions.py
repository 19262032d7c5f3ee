"""Tool contracts: what a tool an agent calls takes, answers, may fail with, and how each failure is handled.

One pure checker (``tool_problems``) and one canonical form (``canonical_tool``), used by the model's
``clean()`` and by the YAML document checker alike (the ``machine_problems`` pattern). A problem is keyed
by its path inside the tool's document (``("error_codes", 0, "backoff", "base_ms")``) so the YAML
checker can give its line and the admin can name the field.

Where a field means what a well-known library means, it keeps that meaning:
- Error policy, per error code, as Temporal's retry policy: ``retryable: false`` is a non-retryable error
  type; ``max_retries`` is Temporal's maximum attempts minus the first one; ``backoff.base_ms`` is the
  initial interval, ``cap_ms`` the maximum interval, and ``exponential`` doubles the interval each retry
  (Temporal's default backoff coefficient, 2.0); ``fixed`` waits ``base_ms`` each time. ``jitter``
  (Temporal has none) takes up to that fraction of the wait off at random, so retries spread out.
- ``circuit_breaker`` as resilience4j's time-based breaker: CLOSED → OPEN after ``failure_threshold``
  failures within ``window_s`` seconds (a count, not resilience4j's failure *rate*); OPEN → HALF_OPEN after
  ``half_open_after_ms`` (``waitDurationInOpenState``); HALF_OPEN lets ``trial_calls`` calls through
  (``permittedNumberOfCallsInHalfOpenState``) and closes on their success, opens again on a failure.
  ``ignore_codes`` as ``ignoreExceptions``: a failed attempt with one of these codes (declared error codes,
  or ``output_invalid``) is counted neither as a success nor as a failure; a half-open trial that ends so
  gives its trial slot back. A rate limit says the upstream is alive: it is not an outage.
- ``risk`` as MCP's tool annotations read it: ``read_only`` (readOnlyHint), ``destructive``
  (destructiveHint), ``write`` otherwise.

Schemas are JSON Schema 2020-12. They are checked against the metaschema here (every problem at its own
path) and compiled by ``rules.engine.tools`` once per revision.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext

TOOL_KEYS = (
    "name",
    "description",
    "input_schema",
    "output_schema",
    "error_codes",
    "on_exhausted",
    "timeout_ms",
    "max_concurrent",
    "circuit_breaker",
    "risk",
    "needs_approval_in",
)
TOOL_REQUIRED = ("name", "input_schema", "risk")
ERROR_CODE_KEYS = ("code", "description", "retryable", "max_retries", "backoff")
BACKOFF_KEYS = ("kind", "base_ms", "cap_ms", "jitter")
BREAKER_KEYS = ("failure_threshold", "window_s", "half_open_after_ms", "trial_calls", "ignore_codes")
BREAKER_COUNTS = ("failure_threshold", "window_s", "half_open_after_ms", "trial_calls")
OUTPUT_INVALID = "output_invalid"  # Arbiter's own code for an output its schema rejects (agents.tools.policy)
RISKS = ("read_only", "write", "destructive")
BACKOFF_KINDS = ("fixed", "exponential")
HANDOFF = "handoff"

DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF: dict[str, Any] = {"kind": "exponential", "base_ms": 200, "cap_ms": 5_000, "jitter": 0}
DEFAULT_BREAKER: dict[str, Any] = {
    "failure_threshold": 5,
    "window_s": 60,
    "half_open_after_ms": 30_000,
    "trial_calls": 1,
}
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# MCP allows more than Arbiter's record keys (hyphens, dots); actions in machines name tools by it.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_ERROR_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_MAX_INT = 2_147_483_647

Problems = dict[tuple[Any, ...], str]


class MachineView:
    """What a tool's checks need of the state machines: states, event names, and which states name the tool."""

    def __init__(self, machines: Mapping[str, Mapping[str, Any]]) -> None:
        self.machines = machines

    def naming(self, tool: str) -> list[str]:
        """The machines whose per-state actions name the tool; all machines when none does."""
        naming = [
            key
            for key, m in self.machines.items()
            if any(tool in (names or []) for names in (m.get("actions") or {}).values())
        ]
        return naming or list(self.machines)


def _unknown(key: str, keys: tuple[str, ...]) -> str:
    return gettext("Unknown key '%(key)s' (expected one of: %(keys)s).") % {"key": key, "keys": ", ".join(keys)}


def _positive_int(value: Any, *, minimum: int = 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= _MAX_INT


def schema_problems(schema: Any, at: tuple[Any, ...]) -> Problems:
    """A JSON Schema 2020-12's problems, each at its path inside the schema."""
    import jsonschema
    import jsonschema_rs

    if not isinstance(schema, dict):
        return {at: gettext("A schema must be a mapping (a JSON Schema object).")}
    dialect = schema.get("$schema", SCHEMA_DIALECT)
    if dialect != SCHEMA_DIALECT:
        return {
            (*at, "$schema"): gettext("Schemas are JSON Schema 2020-12 (%(dialect)s), not %(given)s.")
            % {"dialect": SCHEMA_DIALECT, "given": repr(dialect)}
        }
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    problems: Problems = {}
    for error in meta.iter_errors(schema):
        problems.setdefault(
            (*at, *error.absolute_path), gettext("Not a valid JSON Schema: %(why)s.") % {"why": error.message}
        )
    if not problems:
        # The metaschema does not look inside patterns or follow references; compiling does.
        try:
            jsonschema_rs.validator_for(schema)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            problems[at] = gettext("Not a valid JSON Schema: %(why)s.") % {"why": str(exc).splitlines()[0]}
    return problems


def _backoff_problems(backoff: Any, at: tuple[Any, ...]) -> Problems:
    if not isinstance(backoff, dict):
        return {at: gettext("A backoff is a mapping: kind (fixed or exponential), base_ms, cap_ms, jitter.")}
    problems: Problems = {}
    for key in backoff:
        if key not in BACKOFF_KEYS:
            problems[(*at, key)] = _unknown(key, BACKOFF_KEYS)
    kind = backoff.get("kind", DEFAULT_BACKOFF["kind"])
    if kind not in BACKOFF_KINDS:
        problems[(*at, "kind")] = gettext("The backoff kind is fixed or exponential.")
    base = backoff.get("base_ms", DEFAULT_BACKOFF["base_ms"])
    cap = backoff.get("cap_ms", DEFAULT_BACKOFF["cap_ms"])
    if not _positive_int(base):
        problems[(*at, "base_ms")] = gettext("base_ms is a whole number of milliseconds, at least 1.")
    if not _positive_int(cap):
        problems[(*at, "cap_ms")] = gettext("cap_ms is a whole number of milliseconds, at least 1.")
    elif _positive_int(base) and cap < base:
        problems[(*at, "cap_ms")] = gettext(
            "cap_ms (the longest wait) cannot be shorter than base_ms (the first wait)."
        )
    jitter = backoff.get("jitter", 0)
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not (0 <= jitter <= 1):
        problems[(*at, "jitter")] = gettext("jitter is the fraction of a wait taken off at random, from 0 to 1.")
    return problems


def _error_code_problems(codes: Any) -> Problems:
    if not isinstance(codes, list):
        return {("error_codes",): gettext("error_codes is a list of error codes.")}
    problems: Problems = {}
    seen: dict[str, int] = {}
    for index, entry in enumerate(codes):
        at: tuple[Any, ...] = ("error_codes", index)
        if not isinstance(entry, dict):
            problems[at] = gettext("An error code is a mapping with at least a code.")
            continue
        for key in entry:
            if key not in ERROR_CODE_KEYS:
                problems[(*at, key)] = _unknown(key, ERROR_CODE_KEYS)
        code = entry.get("code")
        if not isinstance(code, str) or not _ERROR_CODE.fullmatch(code):
            problems[(*at, "code")] = gettext("A code is 1 to 64 letters, digits, _ . : or -.")
        elif code in seen:
            problems[(*at, "code")] = gettext("The code %(code)s is declared twice (also error_codes[%(index)s]).") % {
                "code": code,
                "index": seen[code],
            }
        else:
            seen[code] = index
        if not isinstance(entry.get("description", ""), str):
            problems[(*at, "description")] = gettext("A description is text.")
        retryable = entry.get("retryable", False)
        if not isinstance(retryable, bool):
            problems[(*at, "retryable")] = gettext("retryable is true or false.")
        retries = entry.get("max_retries", DEFAULT_MAX_RETRIES if retryable is True else 0)
        if not _positive_int(retries, minimum=0) or retries > 100:
            problems[(*at, "max_retries")] = gettext("max_retries is a whole number from 0 to 100.")
        elif retryable is False and retries:
            problems[(*at, "max_retries")] = gettext("A code that is not retryable cannot have retries.")
        if "backoff" in entry:
            problems.update(_backoff_problems(entry["backoff"], (*at, "backoff")))
    return problems


def _ignore_problems(ignore: Any, declared: set[str], at: tuple[Any, ...]) -> Problems:
    if not isinstance(ignore, list):
        return {at: gettext("ignore_codes is a list of error codes.")}
    problems: Problems = {}
    seen: dict[str, int] = {}
    for index, code in enumerate(ignore):
        if not isinstance(code, str):
            problems[(*at, index)] = gettext("An ignored code is an error code (text).")
        elif code in seen:
            problems[(*at, index)] = gettext("The code %(code)s is ignored twice (also ignore_codes[%(index)s]).") % {
                "code": code,
                "index": seen[code],
            }
        elif code != OUTPUT_INVALID and code not in declared:
            problems[(*at, index)] = gettext(
                "The breaker can only ignore a code the contract declares (or %(invalid)s); %(code)s is not one."
            ) % {"invalid": OUTPUT_INVALID, "code": code}
        if isinstance(code, str) and code not in seen:
            seen[code] = index
    return problems


def _breaker_problems(breaker: Any, declared: set[str]) -> Problems:
    if breaker is None:
        return {}
    at = ("circuit_breaker",)
    if not isinstance(breaker, dict):
        return {at: gettext("A circuit breaker is a mapping: %(keys)s.") % {"keys": ", ".join(BREAKER_KEYS)}}
    problems: Problems = {}
    for key in breaker:
        if key not in BREAKER_KEYS:
            problems[(*at, key)] = _unknown(key, BREAKER_KEYS)
    for key in BREAKER_COUNTS:
        if key in breaker and not _positive_int(breaker[key]):
            problems[(*at, key)] = gettext("%(key)s is a whole number, at least 1.") % {"key": key}
    if "ignore_codes" in breaker:
        problems.update(_ignore_problems(breaker["ignore_codes"], declared, (*at, "ignore_codes")))
    return problems


def _state_problems(tool: Mapping[str, Any], machines: MachineView, name: str) -> Problems:
    problems: Problems = {}
    naming = machines.naming(name)
    states = {s for key in naming for s in machines.machines[key].get("states") or []}
    where = ", ".join(sorted(naming)) or "no machine"
    approval = tool.get("needs_approval_in", [])
    if not isinstance(approval, list) or not all(isinstance(s, str) for s in approval):
        problems[("needs_approval_in",)] = gettext("needs_approval_in is a list of states.")
    else:
        for index, state in enumerate(approval):
            if state not in states:
                problems[("needs_approval_in", index)] = gettext(
                    "Unknown state '%(state)s' (not a state of %(machines)s)."
                ) % {"state": state, "machines": where}
    exhausted = tool.get("on_exhausted", HANDOFF)
    if exhausted == HANDOFF:
        return problems
    if not isinstance(exhausted, dict) or len(exhausted) != 1 or next(iter(exhausted)) not in ("event", "state"):
        problems[("on_exhausted",)] = gettext("on_exhausted is handoff, {event: an event} or {state: a state}.")
        return problems
    ((kind, target),) = exhausted.items()
    missing = []
    for key in naming:
        machine = machines.machines[key]
        known = machine.get("states") or [] if kind == "state" else [e.get("name") for e in machine.get("events") or []]
        if target not in known:
            missing.append(key)
    if missing or not naming:
        message = (
            gettext("Unknown state '%(name)s' (not a state of %(machines)s).")
            if kind == "state"
            else gettext("Unknown event '%(name)s' (not an event of %(machines)s).")
        )
        problems[("on_exhausted", kind)] = message % {"name": target, "machines": ", ".join(missing) or where}
    return problems


def tool_problems(tool: Mapping[str, Any], *, machines: Mapping[str, Mapping[str, Any]]) -> Problems:
    """Every problem of one tool contract (document shape), keyed by its path inside it.

    ``machines`` are the state machines by key in document shape (``states``, ``actions``, ``events``):
    ``needs_approval_in`` and ``on_exhausted`` must name what the machines that name the tool have.
    """
    problems: Problems = {}
    name = tool.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        problems[("name",)] = gettext("A tool's name is 1 to 64 letters, digits, _ . or -.")
        name = ""
    if not isinstance(tool.get("description", ""), str):
        problems[("description",)] = gettext("A description is text.")
    problems.update(schema_problems(tool.get("input_schema"), ("input_schema",)))
    if tool.get("output_schema") is not None:
        problems.update(schema_problems(tool["output_schema"], ("output_schema",)))
    problems.update(_error_code_problems(tool.get("error_codes", [])))
    timeout = tool.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if not _positive_int(timeout):
        problems[("timeout_ms",)] = gettext("timeout_ms is a whole number of milliseconds, at least 1.")
    concurrent = tool.get("max_concurrent")
    if concurrent is not None and not _positive_int(concurrent):
        problems[("max_concurrent",)] = gettext(
            "max_concurrent is a whole number, at least 1 (leave it out for no limit)."
        )
    codes = tool.get("error_codes", [])
    declared = (
        {e["code"] for e in codes if isinstance(e, dict) and isinstance(e.get("code"), str)}
        if isinstance(codes, list)
        else set()
    )
    problems.update(_breaker_problems(tool.get("circuit_breaker"), declared))
    if tool.get("risk") not in RISKS:
        problems[("risk",)] = gettext("The risk is read_only, write or destructive.")
    problems.update(_state_problems(tool, MachineView(machines), name))
    return problems


def canonical_backoff(backoff: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = {**DEFAULT_BACKOFF, **(backoff or {})}
    jitter = merged["jitter"]
    merged["jitter"] = (
        int(jitter) if isinstance(jitter, float) and math.isfinite(jitter) and jitter.is_integer() else jitter
    )
    return {key: merged[key] for key in BACKOFF_KEYS}


def canonical_error_code(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Every field written out: a retryable code with its retries and backoff, another with none."""
    retryable = bool(entry.get("retryable", False))
    document: dict[str, Any] = {"code": entry["code"]}
    if entry.get("description"):
        document["description"] = entry["description"]
    document["retryable"] = retryable
    if retryable:
        document["max_retries"] = entry.get("max_retries", DEFAULT_MAX_RETRIES)
        document["backoff"] = canonical_backoff(entry.get("backoff"))
    return document


def canonical_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A valid tool contract in the one shape revisions, exports and diffs use: defaults written out,
    empty optional fields left out, error codes sorted by code."""
    document: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        document["description"] = tool["description"]
    document["input_schema"] = tool["input_schema"]
    if tool.get("output_schema") is not None:
        document["output_schema"] = tool["output_schema"]
    codes = sorted(tool.get("error_codes") or [], key=lambda e: e["code"])
    if codes:
        document["error_codes"] = [canonical_error_code(e) for e in codes]
    document["on_exhausted"] = tool.get("on_exhausted") or HANDOFF
    document["timeout_ms"] = tool.get("timeout_ms") or DEFAULT_TIMEOUT_MS
    if tool.get("max_concurrent") is not None:
        document["max_concurrent"] = tool["max_concurrent"]
    if tool.get("circuit_breaker") is not None:
        breaker = {**DEFAULT_BREAKER, **tool["circuit_breaker"]}
        # Left out when empty, sorted otherwise: one canonical form for the same meaning.
        ignored = sorted(breaker.pop("ignore_codes", None) or [])
        document["circuit_breaker"] = {**breaker, "ignore_codes": ignored} if ignored else breaker
    document["risk"] = tool["risk"]
    if tool.get("needs_approval_in"):
        document["needs_approval_in"] = list(tool["needs_approval_in"])
    return document

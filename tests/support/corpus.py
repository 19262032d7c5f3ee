"""Replays the recorded API corpus (``steps.json``) and normalises the answers for ``answers.json``.

The corpus pins down what the agent API answers today, request by request, so that a restructuring
that promises "no behaviour change" can prove it: ``test_corpus.py`` sends every step through Django's
whole HTTP stack (middleware, URL resolution, DRF, the exception handler) in order — the steps share
state: sessions move, decisions are logged — and compares each answer with the recorded one.

Recording. ``answers.json`` is written by the same runner:

    ARBITER_RECORD_CORPUS=1 .venv/bin/python -m pytest tests/api/corpus

Re-record ONLY when a behaviour change is intended, and read the diff of ``answers.json`` before
committing it: every changed line is a changed answer that some client will see. Adding steps also
needs a re-recording (answers are matched to steps by position and name).

A step (one object of ``steps.json``):

    name       unique, says what is asked and what should happen
    method     GET, POST, …
    path       may hold ``{var}`` (below); sent as it is, so trailing slashes are tested as written
    headers    sent as they are, after ``{var}`` substitution; ``Authorization: Bearer {token}``
    body       a JSON value, sent as ``application/json`` unless ``headers`` has a ``Content-Type``
    raw        instead of ``body``: the request body as text, sent as it is (``raw_encoding``: how the
               text becomes bytes, UTF-8 unless told; ``latin-1`` makes bytes that are not UTF-8)
    pad_to     pad the body with trailing spaces (JSON whitespace) to this many bytes: size limits
    save       {"var": "dotted.path"}: keep a value of the answer's JSON body, e.g. ``{"d1": "id"}``
    same_body_as   the name of an earlier step whose answer body must be the same, volatile values
               included (an idempotent retry returns the stored answer); JSON is compared as JSON, so
               the order of an object's keys does not count

``{var}`` is replaced by a saved value or a token (``token``: the agent that may call both demo points,
``refund_token``: the agent that may call refund_approval only). A ``{name}`` that is not a known
variable is an error, never sent as it is; JSON text such as ``{"decision": …}`` is not a placeholder.

An answer is its status, its ``Content-Type``, its other headers (``Allow``, ``WWW-Authenticate``,
``Retry-After`` where sent, ``Vary``, the security middleware's …) but ``Content-Length``, the names of
any cookies it sets, and its body. A JSON body (``application/json``, ``application/problem+json``) is kept parsed and
normalised, with ``json_text`` saying how it was written (``compact``: DRF's renderer, UTF-8;
``spaced``: ``json.dumps`` defaults, ASCII escapes), so a response moving to another renderer shows too.
Any other body (the YAML document, Django's HTML 404 page) is kept as ``body_sha256``.

Volatile values are replaced, never dropped; everything else is compared exactly, as JSON text (so
``1`` is not ``1.0`` and ``true`` is not ``1``):

- saved values (decision ids, server-made session ids) and the tokens, wherever they occur in a string,
  by ``<var>``; any other UUID by ``<uuid>`` (so a retry that returned a new id instead of the saved one
  would show);
- the values of the keys ``created_at`` and ``at`` (an ISO time ending in Z), ``evaluated_us`` (a whole number
  ≥ 0) and ``seconds_in_state`` (a number ≥ 0) by ``<created_at>`` and so on — only when the value has
  that form: ``null`` stays ``null``, and a value of another form is kept, so that it fails;
- the ``Content-Length`` header is not recorded: it follows the body, whose volatile numbers vary in
  length; cookies are recorded by name (none is set today).

JSON objects are compared as objects: the order of their keys is not recorded (PostgreSQL's jsonb
does not keep it, see ``_exact``). The demo has no time-window rules, so the clock is not fixed. Both
JSON files are kept in one form (sorted keys, indent 2, UTF-8 text as it is; ``write_json``), which
``test_corpus.py`` checks, so that hand edits of ``steps.json`` and re-recordings diff cleanly. The
corpus passes on SQLite and on PostgreSQL alike; an answer that differs between them is not
normalised away unless the difference is truly volatile.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import ROOT

# The recorded steps and answers live beside the test that plays them.
HERE = ROOT / "tests" / "api" / "corpus"
STEPS = HERE / "steps.json"
ANSWERS = HERE / "answers.json"
RECORD_ENV = "ARBITER_RECORD_CORPUS"

JSON_TYPES = ("application/json", "application/problem+json")
# Every response header is recorded but these: Content-Type has its own place, Content-Length follows
# the body (whose volatile numbers vary in length).
UNRECORDED_HEADERS = frozenset({"content-type", "content-length"})

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ISO_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def recording() -> bool:
    return os.environ.get(RECORD_ENV, "") not in ("", "0")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def dumps(data: Any) -> str:
    """Deterministic, diff-friendly JSON: sorted keys, indent 2, UTF-8 text as it is."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, data: Any) -> None:
    path.write_text(dumps(data), encoding="utf-8")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


# -- requests -------------------------------------------------------------------------------------


class CorpusError(AssertionError):
    """The corpus itself is wrong (an unknown variable, a save path the answer lacks, a bad step)."""


def substitute(value: Any, variables: Mapping[str, str]) -> Any:
    """``{var}`` replaced in every string of ``value`` (keys included)."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in variables:
                raise CorpusError(f"unknown variable {{{name}}}; known: {', '.join(sorted(variables))}")
            return variables[name]

        return _PLACEHOLDER.sub(one, value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    content_type: str | None


def build_request(step: Mapping[str, Any], variables: Mapping[str, str]) -> Request:
    known = {"name", "method", "path", "headers", "body", "raw", "raw_encoding", "pad_to", "save", "same_body_as"}
    unknown = sorted(set(step) - known)
    if unknown:
        raise CorpusError(f"step {step.get('name')!r}: unknown fields {unknown}")
    if "body" in step and "raw" in step:
        raise CorpusError(f"step {step['name']!r}: body or raw, not both")
    headers = {str(k): str(v) for k, v in substitute(step.get("headers", {}), variables).items()}
    content_type = next((headers.pop(k) for k in list(headers) if k.lower() == "content-type"), None)
    if "body" in step:
        body = json.dumps(substitute(step["body"], variables), ensure_ascii=False).encode("utf-8")
        content_type = content_type or "application/json"
    elif "raw" in step:
        body = substitute(step["raw"], variables).encode(step.get("raw_encoding", "utf-8"))
        content_type = content_type or "application/json"
    else:
        body = b""
    if "pad_to" in step:
        if len(body) > step["pad_to"]:
            raise CorpusError(f"step {step['name']!r}: the body is already longer than pad_to")
        body += b" " * (step["pad_to"] - len(body))
    return Request(
        method=step["method"].upper(),
        path=substitute(step["path"], variables),
        headers=headers,
        body=body,
        content_type=content_type,
    )


# -- answers --------------------------------------------------------------------------------------


def _json_text(raw: bytes, parsed: Any) -> str:
    if raw == json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode("utf-8"):
        return "compact"
    if raw == json.dumps(parsed).encode("utf-8"):
        return "spaced"
    return "other"


class Normaliser:
    """Replaces the volatile values of answers by stable names (see the module docstring)."""

    VOLATILE_KEYS: dict[str, Callable[[Any], bool]] = {
        "created_at": lambda v: isinstance(v, str) and _ISO_UTC.fullmatch(v) is not None,
        "at": lambda v: isinstance(v, str) and _ISO_UTC.fullmatch(v) is not None,  # a timeline event's time
        # A tool attempt's times (its answer and its timeline event).
        "deadline": lambda v: isinstance(v, str) and _ISO_UTC.fullmatch(v) is not None,
        "started_at": lambda v: isinstance(v, str) and _ISO_UTC.fullmatch(v) is not None,
        "finished_at": lambda v: isinstance(v, str) and _ISO_UTC.fullmatch(v) is not None,
        "evaluated_us": lambda v: type(v) is int and v >= 0,
        "seconds_in_state": lambda v: type(v) in (int, float) and v >= 0,
        # Places in the service-wide event sequence: on PostgreSQL a sequence no rollback gives back, so
        # they depend on what ran before (a timeline's or changes' ``next`` likewise; a failed tool
        # attempt's ``next`` is a word, kept).
        "sequence_id": lambda v: type(v) is int and v > 0,
        "next": lambda v: type(v) is int and v >= 0,
    }

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # volatile value -> its variable name

    def name(self, value: str, var: str) -> None:
        self.names[value] = var

    def text(self, value: str) -> str:
        # Longest first, so that a value holding another one is replaced whole.
        for volatile in sorted(self.names, key=len, reverse=True):
            value = value.replace(volatile, f"<{self.names[volatile]}>")
        return _UUID.sub("<uuid>", value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                check = self.VOLATILE_KEYS.get(k)
                out[self.text(k)] = f"<{k}>" if check is not None and check(v) else self.value(v)
            return out
        return value


def dig(body: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(body, dict) or part not in body:
            raise CorpusError(f"the answer has no {path!r}: {body!r}")
        body = body[part]
    return body


def answer_of(
    step: Mapping[str, Any], response: Any, normaliser: Normaliser, variables: dict[str, str]
) -> dict[str, Any]:
    """The recorded form of one response; also saves the step's variables."""
    raw: bytes = response.content
    content_type = response.get("Content-Type")
    parsed: Any = None
    is_json = content_type is not None and content_type.split(";")[0].strip() in JSON_TYPES
    if is_json:
        try:
            parsed = json.loads(raw.decode("utf-8"))
        except ValueError:
            is_json = False
    for var, path in step.get("save", {}).items():
        if not is_json:
            raise CorpusError(f"step {step['name']!r}: cannot save {var} from a body that is not JSON")
        value = dig(parsed, path)
        if type(value) is int and value >= 0:  # a sequence id: sent on, masked by its key (VOLATILE_KEYS)
            variables[var] = str(value)
            continue
        if not isinstance(value, str) or not value:
            raise CorpusError(f"step {step['name']!r}: {path} is {value!r}, not a text to save")
        variables[var] = value
        normaliser.name(value, var)
    answer: dict[str, Any] = {"step": step["name"], "status": response.status_code, "content_type": content_type}
    headers = {h: normaliser.text(v) for h, v in response.items() if h.lower() not in UNRECORDED_HEADERS}
    if headers:
        answer["headers"] = headers
    if response.cookies:  # their values are volatile (CSRF, session keys): the names are what is set
        answer["cookies"] = sorted(response.cookies)
    if is_json:
        answer["body"] = normaliser.value(parsed)
        answer["json_text"] = _json_text(raw, parsed)
    else:
        answer["body_sha256"] = hashlib.sha256(raw).hexdigest()
    return answer


# -- the run --------------------------------------------------------------------------------------


def _exact(raw: bytes) -> str:
    """A body as text to compare exactly, volatile values included, with JSON objects' keys in one order.

    Key order is not part of a JSON answer, and PostgreSQL's jsonb does not keep it: a session move read
    back from the decision log is ``{"seq", "from", "state"}`` there, ``{"from", "state", "seq"}`` as made.
    """
    try:
        return canonical(json.loads(raw.decode("utf-8")))
    except ValueError:
        return raw.hex()


def run(client: Any, steps: list[dict[str, Any]], tokens: Mapping[str, str]) -> list[dict[str, Any]]:
    """Send every step in order through ``client`` (a DRF ``APIClient``); the normalised answers."""
    names = [s["name"] for s in steps]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CorpusError(f"step names must be unique: {duplicates}")
    variables: dict[str, str] = dict(tokens)
    normaliser = Normaliser()
    for var, token in tokens.items():
        normaliser.name(token, var)
    answers: list[dict[str, Any]] = []
    raw_bodies: dict[str, bytes] = {}
    for step in steps:
        request = build_request(step, variables)
        response = client.generic(
            request.method,
            request.path,
            data=request.body,
            content_type=request.content_type,
            headers=request.headers,
        )
        answers.append(answer_of(step, response, normaliser, variables))
        raw_bodies[step["name"]] = response.content
        earlier = step.get("same_body_as")
        if earlier is not None:
            if earlier not in raw_bodies:
                raise CorpusError(f"step {step['name']!r}: same_body_as names no earlier step: {earlier!r}")
            if _exact(raw_bodies[earlier]) != _exact(response.content):
                raise AssertionError(
                    f"step {step['name']!r} should answer exactly what {earlier!r} answered:\n"
                    f"  {earlier}: {raw_bodies[earlier]!r}\n  {step['name']}: {response.content!r}"
                )
    return answers


def differences(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> str | None:
    """None when every answer is as recorded; otherwise the first differing step with a diff."""
    expected_names = [a["step"] for a in expected]
    actual_names = [a["step"] for a in actual]
    if expected_names != actual_names:
        diff = "\n".join(difflib.unified_diff(expected_names, actual_names, "answers.json", "steps.json", lineterm=""))
        return f"steps.json and answers.json list different steps; re-record if the steps changed on purpose:\n{diff}"
    differing = [i for i, (e, a) in enumerate(zip(expected, actual, strict=True)) if canonical(e) != canonical(a)]
    if not differing:
        return None
    first = differing[0]
    step = steps[first]
    diff = "\n".join(
        difflib.unified_diff(
            canonical(expected[first]).splitlines(),
            canonical(actual[first]).splitlines(),
            "recorded",
            "now",
            lineterm="",
        )
    )
    later = [f"  {i + 1}. {actual[i]['step']}" for i in differing[1:]]
    shown = "\n".join(later[:10]) + ("\n  …" if len(later) > 10 else "")
    return (
        f"step {first + 1} of {len(actual)}, {expected[first]['step']!r}, answers differently: "
        f"{step['method']} {step['path']}\n{diff}"
        + (f"\n{len(later)} later step(s) differ too (they may follow from this one):\n{shown}" if later else "")
    )

"""The body limit admits every request the schema allows, and the largest one is accepted over HTTP.

``maxLength`` counts characters; the limit counts bytes. A character is 1 to 4 bytes of UTF-8, and a
JSON encoder that escapes non-ASCII text (``json.dumps`` by default) writes an astral character such
as an emoji as a 12-byte surrogate-pair escape (``\\ud83d\\ude00``). So the longest request the
schema bounds is computed here from ``docs/openapi.yaml`` at 12 bytes a character, and the limit must
hold it plus ``FREE_FORM_BUDGET`` for the members the schema leaves free (``facts``, ``context``,
``params``). Raising a ``maxLength`` without raising ``ARBITER_MAX_REQUEST_BYTES`` fails here.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from django.conf import settings

from agents.runtimes.models import AgentRuntime
from agents.sessions.services import session_create
from tests.support import SPEC

WIDEST_CHARACTER = 12  # bytes: "\\ud83d\\ude00", one code point, one character for maxLength
LONGEST_NUMBER = 24  # characters: the longest repr of a double, e.g. -2.2250738585072014e-308
FREE_FORM_BUDGET = 128 * 1024
REQUESTS = [
    "DecideRequest",
    "SessionCreateRequest",
    "TransitionRequest",
    "ActionRequest",
    "InterruptRequest",
    "ResumeRequest",
    "AnomalyRequest",
]
STAFF_REQUESTS = [
    "ChangeRequestCreate",
    "ChangeRequestApprove",
    "ChangeRequestDecision",
    "QueueNote",
    "QueueReturn",
    "QueueResolve",
    "SimulationRequest",
]


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC.read_text(encoding="utf-8"))


def longest(spec: dict[str, Any], schema: dict[str, Any]) -> tuple[int, bool]:
    """(bytes of the longest compact JSON the schema bounds, whether some part of it is left free)."""
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        options = [longest(spec, option) for option in schema["anyOf"]]
        return max(size for size, _ in options), any(free for _, free in options)
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"]), False
    types = schema.get("type", "object")
    options = [longest_of_type(spec, schema, t) for t in (types if isinstance(types, list) else [types])]
    return max(size for size, _ in options), any(free for _, free in options)


def longest_of_type(spec: dict[str, Any], schema: dict[str, Any], kind: str) -> tuple[int, bool]:
    if kind == "null":
        return 4, False
    if kind == "boolean":
        return 5, False
    if kind == "string":
        if "maxLength" not in schema:
            return 2, True
        return 2 + WIDEST_CHARACTER * schema["maxLength"], False
    if kind == "integer":
        if "maximum" not in schema or "minimum" not in schema:
            return 0, True
        return max(len(str(schema["maximum"])), len(str(schema["minimum"]))), False
    if kind == "number":
        return LONGEST_NUMBER, "maximum" not in schema or "minimum" not in schema
    if kind == "array":
        if "maxItems" not in schema:
            return 2, True
        item, free = longest(spec, schema.get("items", {}))
        return 2 + schema["maxItems"] * (item + 1), free
    assert kind == "object", kind
    properties = schema.get("properties", {})
    free = schema.get("additionalProperties", True) is not False
    size = 2 + max(len(properties) - 1, 0)  # braces and commas
    for name, prop in properties.items():
        value, prop_free = longest(spec, prop)
        size += len(json.dumps(name)) + 1 + value
        free = free or prop_free
    return size, free


@pytest.mark.parametrize("name", REQUESTS)
def test_the_limit_holds_the_longest_request_the_schema_bounds_and_room_for_the_free_members(spec, name):
    size, free = longest(spec, spec["components"]["schemas"][name])
    needed = size + (FREE_FORM_BUDGET if free else 0)
    assert needed <= settings.ARBITER_MAX_REQUEST_BYTES, (name, size, needed)


@pytest.mark.parametrize("name", STAFF_REQUESTS)
def test_the_staff_limit_holds_the_longest_staff_request_the_schema_bounds(spec, name):
    # Otherwise a document one character too long would be a 413 (before authentication, without
    # naming the field) rather than the 400 that says which field is too long.
    size, free = longest(spec, spec["components"]["schemas"][name])
    needed = size + (FREE_FORM_BUDGET if free else 0)
    assert needed <= settings.ARBITER_MAX_STAFF_REQUEST_BYTES, (name, size, needed)


def test_the_decision_request_is_the_longest_and_its_size_is_the_one_documented(spec):
    sizes = {name: longest(spec, spec["components"]["schemas"][name])[0] for name in REQUESTS}
    assert max(sizes, key=sizes.get) == "DecideRequest"
    # decision_service/settings/base.py and docs/api.md quote this figure.
    assert sizes["DecideRequest"] == 392_753, sizes


# --- Over HTTP ----------------------------------------------------------------------------------------

EMOJI = "\U0001f600"  # 4 bytes of UTF-8, 12 as a JSON escape


def largest_decision(spec: dict[str, Any], session_id: str) -> dict[str, Any]:
    """A decision request with every bounded text at its longest (candidate_raw, not candidate: the
    schema allows only one of the two, and the raw text is the longer)."""
    props = spec["components"]["schemas"]["DecideRequest"]["properties"]
    llm = spec["components"]["schemas"]["Llm"]["properties"]
    return {
        "point": "intent_routing",
        "session_id": session_id,
        "input": EMOJI * props["input"]["maxLength"],
        "candidate_raw": EMOJI * props["candidate_raw"]["maxLength"],
        "facts": {},
        "tokens": {"prompt": 10_000_000, "completion": 10_000_000},
        "llm": {
            "model": EMOJI * llm["model"]["maxLength"],
            "prompt_version": EMOJI * llm["prompt_version"]["maxLength"],
            "latency_ms": llm["latency_ms"]["maximum"],
        },
        "apply": False,
    }


def post(live_server, path: str, body: bytes, token: str) -> tuple[int, dict[str, Any]]:
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        connection.request(
            "POST",
            path,
            body=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "utf-8"])
def test_the_largest_schema_valid_decision_is_accepted(spec, live_demo, live_token, ascii_only):
    agent = AgentRuntime.objects.get(name="api_bot")
    session_id = EMOJI * 128
    session_create(agent=agent, machine_key="after_sales", session_id=session_id)
    body = json.dumps(largest_decision(spec, session_id), ensure_ascii=ascii_only).encode("utf-8")
    assert len(body) > 64 * 1024  # the old limit refused it
    status, answer = post(live_demo, "/api/v1/decisions", body, live_token)
    assert status == 201, answer
    assert answer["ruled_by"] == "default" and answer["candidate"] is None  # the emoji hold no candidate

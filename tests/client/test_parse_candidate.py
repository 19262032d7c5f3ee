"""The client reads model output as the server does: its ``parse_candidate`` and the engine's
(rules/engine/candidate.py, imported here only) are given the same inputs and must agree on the
candidate or on the reason there is none."""

from __future__ import annotations

import json
from typing import Any

import pytest
from arbiter_client import CandidateParseError, parse_candidate
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine.candidate import CandidateParseError as ServerParseError
from rules.engine.candidate import parse_candidate as server_parse


def both(output: str | dict[str, Any]) -> tuple[Any, Any]:
    try:
        client: Any = dict(parse_candidate(output))
    except CandidateParseError as exc:
        client = ("refused", str(exc))
    text = output if isinstance(output, str) else json.dumps(output)
    try:
        found = server_parse(text)
        server: Any = {"decision": found.decision, "confidence": found.confidence, "reason": found.reason}
    except ServerParseError as exc:
        server = ("refused", str(exc))
    return client, server


SEEN = [
    '{"decision": "general_query", "confidence": 0.9, "reason": "fault"}',
    'Sure!\n```json\n{"intent": "close_order", "confidence": 1}\n```\nanything else?',
    '{"outcome": " product_info ", "confidence": 0.7}',
    "I think the customer wants a refund.",
    '{"decision": "x", "confidence": "high"}',
    '{"decision": "x", "confidence": true}',
    '{"decision": "x", "confidence": 1.5}',
    '{"decision": "", "confidence": 0.5}',
    '{"confidence": 0.5}',
    '{"decision": "x", "confidence": 0.5, "reason": 3}',
    '{"decision": "x", "confidence": NaN}',
    '{"a": 1} then {"decision": "later", "confidence": 0.2}',
    '```\n{"decision": "fenced", "confidence": 0.3}\n``` {"decision": "bare", "confidence": 0.4}',
    "{" * 5000,
    '{"decision": "' + "d" * 129 + '", "confidence": 0.5}',
    '{"decision": "x", "confidence": 0.5, "reason": null}',
]


@pytest.mark.parametrize("output", SEEN)
def test_the_client_and_the_server_read_the_same_text_alike(output: str) -> None:
    client, server = both(output)
    assert client == server


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
CANDIDATE_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "decision": st.text(max_size=140) | JSON,
        "intent": st.text(max_size=20) | JSON,
        "confidence": st.floats(-1, 2) | st.integers(-2, 2) | JSON,
        "reason": st.text(max_size=30) | st.none() | JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(CANDIDATE_LIKE, st.text(max_size=30), st.text(max_size=30), st.booleans())
def test_any_candidate_like_output_wrapped_in_prose_is_read_alike(
    obj: dict[str, Any], before: str, after: str, fenced: bool
) -> None:
    body = json.dumps(obj, ensure_ascii=False)
    text = f"{before}```json\n{body}\n```{after}" if fenced else f"{before}{body}{after}"
    client, server = both(text)
    assert client == server


@settings(max_examples=200, deadline=None)
@given(CANDIDATE_LIKE)
def test_an_already_parsed_object_is_judged_as_its_json_would_be(obj: dict[str, Any]) -> None:
    client, server = both(obj)
    assert client == server


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[]":,. 0123456789abcdeintouscfr\n`', max_size=200))
def test_arbitrary_text_is_read_alike(text: str) -> None:
    client, server = both(text)
    assert client == server

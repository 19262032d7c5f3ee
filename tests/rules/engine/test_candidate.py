"""Reading a candidate out of a model's raw text: whatever the text, a candidate or a reason why not.

The decide path turns ``CandidateParseError`` into invalid model output (the default answers and an
anomaly is recorded); any other exception would be a server error. So the property every test here
checks is the same: ``parse_candidate`` returns a candidate within the API's limits, or raises
``CandidateParseError`` — for prose, fences, JSON nested past the decoder's recursion limit, integers
of thousands of digits, NaN and infinities, and text that is braces everywhere.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rules.engine import candidate as candidate_module
from rules.engine.candidate import (
    MAX_DECISION_CHARS,
    MAX_FAILED_ATTEMPTS,
    MAX_REASON_CHARS,
    CandidateParseError,
    parse_candidate,
)
from rules.engine.model import Candidate

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parses_or_refuses(raw: str) -> Candidate | None:
    """The contract: a candidate the API would have accepted, or ``CandidateParseError``; nothing else."""
    try:
        candidate = parse_candidate(raw)
    except CandidateParseError as exc:
        assert str(exc), "the anomaly record needs a reason"
        return None
    assert isinstance(candidate, Candidate)
    assert isinstance(candidate.decision, str) and candidate.decision == candidate.decision.strip()
    assert 0 < len(candidate.decision) <= MAX_DECISION_CHARS
    assert isinstance(candidate.confidence, float) and math.isfinite(candidate.confidence)
    assert 0 <= candidate.confidence <= 1
    assert isinstance(candidate.reason, str) and len(candidate.reason) <= MAX_REASON_CHARS
    for text in (candidate.decision, candidate.reason):
        assert "\x00" not in text
        text.encode("utf-8")  # storable: no unpaired surrogate
    return candidate


# --- What a model might write ------------------------------------------------------------------------

# The digits of an integer longer than int() converts (4,300 digits), as JSON text.
HUGE_INTEGERS = st.builds(
    lambda sign, digits: sign + "9" * digits, st.sampled_from(["", "-"]), st.integers(4_000, 12_000)
)
numbers = st.one_of(
    st.integers(),
    st.floats(),  # NaN and the infinities included: json.dumps writes them as NaN / Infinity
    st.sampled_from([0, 1, 0.5, 1e308, -0.0, 5e-324]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
decisions = st.one_of(st.sampled_from(["general_query", "refund_request", " padded ", "", "  "]), st.text(max_size=140))
candidate_objects = st.fixed_dictionaries(
    {},
    optional={
        "decision": st.one_of(decisions, json_values),
        "intent": st.one_of(decisions, json_values),
        "confidence": st.one_of(numbers, json_values),
        "reason": st.one_of(st.text(max_size=50), st.none(), json_values),
        "extra": json_values,
    },
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _nested(depth: int, core: str, opener: str) -> str:
    """``core`` inside ``depth`` levels of lists or objects (``opener`` "[" or "{")."""
    if opener == "[":
        return "[" * depth + core + "]" * depth
    return '{"a":' * depth + core + "}" * depth


pathological = st.one_of(
    # Nested past the decoder's recursion limit, closed or not, around a candidate or alone.
    st.builds(
        _nested,
        st.integers(500, 5000),
        st.sampled_from(['{"decision": "general_query", "confidence": 0.9}', "1", ""]),
        st.sampled_from("[{"),
    ),
    st.builds(
        lambda depth, opener: (opener * depth)[:20_000], st.integers(1, 20_000), st.sampled_from(['{"a":', "[", "{"])
    ),
    # Integers longer than int() converts (4,300 digits), where confidence or anything else goes.
    st.builds(lambda n: '{"decision": "general_query", "confidence": ' + n + "}", HUGE_INTEGERS),
    st.builds(lambda n: '{"decision": "a", "confidence": 0.5, "x": ' + n + "}", HUGE_INTEGERS),
    st.builds(lambda n: '{"decision": "a", "confidence": 0.' + "9" * n + "}", st.integers(1, 19_000)),
    st.sampled_from(
        [
            '{"decision": "a", "confidence": NaN}',
            '{"decision": "a", "confidence": Infinity}',
            '{"decision": "a", "confidence": -Infinity}',
            '{"decision": "a", "confidence": 1e99999}',
            '{"decision": "a\\u0000", "confidence": 0.5}',
            '{"decision": "\\ud800", "confidence": 0.5}',
            '{"decision": "a", "confidence": 0.5, "reason": "\\udfff"}',
            '{"decision": "a", "confidence": true}',
        ]
    ),
    st.builds(lambda n: "```" * n, st.integers(1, 6_000)),
    st.builds(lambda n: "```json\n" + '{"a":' * n, st.integers(1, 3_000)),
)

raw_outputs = st.one_of(
    st.text(max_size=200),
    st.builds(_dumps, candidate_objects),
    st.builds(
        lambda obj, before, after: before + _dumps(obj) + after,
        candidate_objects,
        st.text(max_size=40),
        st.text(max_size=40),
    ),
    st.builds(lambda obj, prose: f"{prose}\n```json\n{_dumps(obj)}\n```", candidate_objects, st.text(max_size=40)),
    pathological,
    st.builds(str.__add__, pathological, st.builds(_dumps, candidate_objects)),
)


@FUZZ
@given(raw_outputs)
@example("{" * 20_000)
@example('{"a":' * 4_000)
@example('{"decision": "x", "confidence": 1' + "0" * 5_000 + "}")
@example('{"decision": "x", "confidence": 0.5, "reason": ' + "[" * 5_000 + "]" * 5_000 + "}")
def test_any_raw_output_gives_a_candidate_within_the_limits_or_a_parse_error(raw):
    parses_or_refuses(raw)


# --- What it must still find -------------------------------------------------------------------------

prose = st.text(st.characters(exclude_characters="{`"), max_size=60)
valid = st.fixed_dictionaries(
    {
        "decision": st.text(
            st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=60
        )
        .map(str.strip)
        .filter(bool),
        "confidence": st.one_of(st.floats(0, 1), st.sampled_from([0, 1])),
    },
    optional={"reason": st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=80)},
)


@FUZZ
@given(valid, prose, prose, st.booleans())
def test_a_valid_candidate_in_prose_or_a_fence_is_read_exactly(obj, before, after, fenced):
    body = _dumps(obj)
    raw = f"{before}\n```json\n{body}\n```\n{after}" if fenced else before + body + after
    found = parses_or_refuses(raw)
    assert found == Candidate(obj["decision"], float(obj["confidence"]), obj.get("reason", ""))


@pytest.mark.parametrize("digits", [4_301, 10_000])
def test_an_integer_too_long_for_int_is_a_number_not_a_crash(digits):
    # A candidate whose other field holds such a number is still read; as confidence it is out of range.
    big = "1" + "0" * (digits - 1)
    assert parses_or_refuses('{"decision": "a", "confidence": 1, "tokens": ' + big + "}") == Candidate("a", 1.0)
    with pytest.raises(CandidateParseError, match="outside"):
        parse_candidate('{"decision": "a", "confidence": ' + big + "}")


def test_json_nested_past_the_recursion_limit_is_no_candidate_and_the_rest_is_still_searched():
    deep = "[" * 5_000 + "]" * 5_000
    with pytest.raises(CandidateParseError):
        parse_candidate('{"decision": "a", "confidence": 0.5, "reason": ' + deep + "}")
    after = deep + ' then {"decision": "a", "confidence": 0.5}'
    assert parse_candidate(after) == Candidate("a", 0.5)


class _CountingDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__(parse_int=float)
        self.calls = 0

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        self.calls += 1
        return super().raw_decode(s, idx)


@pytest.mark.parametrize(
    "raw",
    [
        '{"a":' * 4_000,  # every brace starts an object, none ends: each attempt reads to the end
        '{"' * 10_000,
        ('{"a":' * 900 + "x") * 4,
        "```json\n" + '{"a":' * 3_000 + "```" + '{"a":' * 1_000,
    ],
)
def test_the_search_gives_up_after_a_bounded_number_of_attempts(monkeypatch, raw):
    # Without the bound, each of thousands of braces costs a pass over the text: quadratic, seconds of
    # CPU for one 20,000-character request.
    decoder = _CountingDecoder()
    monkeypatch.setattr(candidate_module, "_DECODER", decoder)
    with pytest.raises(CandidateParseError):
        parse_candidate(raw)
    assert decoder.calls <= MAX_FAILED_ATTEMPTS


def test_braces_that_cannot_start_an_object_are_not_attempts(monkeypatch):
    decoder = _CountingDecoder()
    monkeypatch.setattr(candidate_module, "_DECODER", decoder)
    raw = "{" * 19_000 + '{"decision": "a", "confidence": 0.5}'
    assert parse_candidate(raw) == Candidate("a", 0.5)
    assert decoder.calls == 1

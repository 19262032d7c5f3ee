"""The ``tools:`` section of the configuration document: each problem at its line, and the canonical form
(defaults written out, error codes sorted); pure, no database."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml
from rules.config.tool_definitions import tool_problems
from tests.support.tools import DOC, problems_of


def test_a_contract_reads_in_canonical_form():
    (tool,) = config_from_yaml(DOC)["tools"]
    assert tool["error_codes"] == [
        {"code": "ORDER_LOCKED", "retryable": False},
        {
            "code": "UPSTREAM_TIMEOUT",
            "retryable": True,
            "max_retries": 3,
            "backoff": {"kind": "exponential", "base_ms": 100, "cap_ms": 1000, "jitter": 0},
        },
    ]
    assert (tool["on_exhausted"], tool["timeout_ms"], tool["needs_approval_in"]) == (
        {"event": "clarification_required"},
        10_000,
        ["executing"],
    )
    assert "circuit_breaker" not in tool and "max_concurrent" not in tool


def test_a_document_without_tools_has_no_tools_section():
    document = config_from_yaml(DOC.split("tools:")[0])
    assert "tools" not in document


def test_a_bad_schema_is_reported_at_the_schema_key_that_has_it():
    problems = problems_of(DOC.replace("{type: string, pattern", "{type: strng, pattern"))
    assert len(problems) == 1
    assert problems[0].startswith("tools[0].input_schema.properties.receiver_phone.type: not a valid JSON Schema")
    assert problems[0].endswith("(line 25)")


def test_a_schema_of_another_draft_is_refused():
    problems = problems_of(
        DOC.replace("      type: object\n", '      $schema: "http://json-schema.org/draft-07/schema#"\n', 1)
    )
    assert problems == [
        "tools[0].input_schema['$schema']: schemas are JSON Schema 2020-12 "
        "(https://json-schema.org/draft/2020-12/schema), not 'http://json-schema.org/draft-07/schema#' (line 23)"
    ]


def test_a_pattern_that_does_not_compile_is_refused():
    problems = problems_of(DOC.replace('"^1[3-9][0-9]{9}$"', '"^1[3-9"'))
    assert len(problems) == 1 and problems[0].startswith("tools[0].input_schema: not a valid JSON Schema")


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        ("{kind: linear, base_ms: 100, cap_ms: 1000}", "backoff.kind: the backoff kind is fixed or exponential"),
        ("{kind: exponential, base_ms: 0, cap_ms: 1000}", "backoff.base_ms: base_ms is a whole number"),
        ("{kind: exponential, base_ms: 500, cap_ms: 100}", "backoff.cap_ms: cap_ms (the longest wait) cannot be"),
        ("{kind: fixed, base_ms: 100, cap_ms: 100, jitter: 2}", "backoff.jitter: jitter is the fraction"),
        ("{kind: fixed, base_ms: 100, cap: 100}", "backoff.cap: unknown key 'cap'"),
    ],
)
def test_a_bad_backoff_is_reported_at_its_line(backoff, expected):
    problems = problems_of(DOC.replace("{kind: exponential, base_ms: 100, cap_ms: 1000}", backoff))
    assert [p.split(": ", 1)[0] for p in problems] == [f"tools[0].error_codes[0].{expected.split(':')[0]}"]
    assert expected.split(": ", 1)[1] in problems[0] and problems[0].endswith("(line 30)"), problems


def test_an_unknown_state_in_needs_approval_in_is_reported_at_its_line():
    problems = problems_of(DOC.replace("needs_approval_in: [executing]", "needs_approval_in: [executing, shipping]"))
    assert problems == ["tools[0].needs_approval_in[1]: unknown state 'shipping' (not a state of orders) (line 34)"]


def test_an_unknown_event_in_on_exhausted_is_reported_at_its_line():
    problems = problems_of(DOC.replace("{event: clarification_required}", "{event: give_up}"))
    assert problems == ["tools[0].on_exhausted.event: unknown event 'give_up' (not an event of orders) (line 32)"]


def test_on_exhausted_may_name_a_state_or_handoff():
    assert config_from_yaml(DOC.replace("{event: clarification_required}", "{state: collecting}"))
    assert config_from_yaml(DOC.replace("{event: clarification_required}", "handoff"))
    problems = problems_of(DOC.replace("{event: clarification_required}", "{state: nowhere}"))
    assert problems == ["tools[0].on_exhausted.state: unknown state 'nowhere' (not a state of orders) (line 32)"]


def test_other_problems_each_at_their_line():
    broken = (
        DOC.replace("risk: write", "risk: dangerous")
        .replace("      - code: ORDER_LOCKED", "      - code: UPSTREAM_TIMEOUT\n        max_retries: 2")
        .replace(
            "    on_exhausted:", "    timeout_ms: 0\n    circuit_breaker: {failure_threshold: 0}\n    on_exhausted:"
        )
    )
    assert problems_of(broken) == [
        "tools[0].error_codes[1].code: the code UPSTREAM_TIMEOUT is declared twice (also error_codes[0]) (line 31)",
        "tools[0].error_codes[1].max_retries: a code that is not retryable cannot have retries (line 32)",
        "tools[0].timeout_ms: timeout_ms is a whole number of milliseconds, at least 1 (line 33)",
        "tools[0].circuit_breaker.failure_threshold: failure_threshold is a whole number, at least 1 (line 34)",
        "tools[0].risk: the risk is read_only, write or destructive (line 36)",
    ]


def test_two_tools_of_one_name_are_refused():
    second = DOC.split("tools:\n")[1]
    problems = problems_of(DOC + second)
    assert problems == ["tools[1].name: duplicate name 'update_order': tools[0] (line 21) has it too (line 35)"]


def test_the_checker_is_the_one_the_model_uses():
    # Not named by any machine's actions: its states are checked against every machine.
    machines = {"m": {"states": ["a", "b"], "actions": {}, "events": []}}
    tool = {"name": "t", "input_schema": {"type": "object"}, "risk": "read_only", "needs_approval_in": ["c"]}
    assert tool_problems(tool, machines=machines) == {("needs_approval_in", 0): "Unknown state 'c' (not a state of m)."}

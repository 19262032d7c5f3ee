"""A breaker's ``ignore_codes`` (resilience4j's ignoreExceptions): declared codes or ``output_invalid``,
each once, in a list; each problem at its line; the canonical form sorts it and leaves it out when empty."""

from __future__ import annotations

from rules.config.document.validate import config_from_yaml
from tests.support.tools import DOC, problems_of


def with_breaker(lines: str) -> str:
    return DOC.replace("    on_exhausted:", f"    circuit_breaker:\n{lines}    on_exhausted:")


def test_ignored_codes_read_sorted_beside_the_defaults():
    (tool,) = config_from_yaml(with_breaker("      ignore_codes: [UPSTREAM_TIMEOUT, output_invalid, ORDER_LOCKED]\n"))[
        "tools"
    ]
    assert tool["circuit_breaker"] == {
        "failure_threshold": 5,
        "window_s": 60,
        "half_open_after_ms": 30_000,
        "trial_calls": 1,
        "ignore_codes": ["ORDER_LOCKED", "UPSTREAM_TIMEOUT", "output_invalid"],
    }


def test_an_empty_list_is_left_out():
    (tool,) = config_from_yaml(with_breaker("      failure_threshold: 3\n      ignore_codes: []\n"))["tools"]
    assert "ignore_codes" not in tool["circuit_breaker"] and tool["circuit_breaker"]["failure_threshold"] == 3


def test_an_undeclared_code_and_a_repeat_are_reported_each_at_its_line():
    problems = problems_of(
        with_breaker(
            "      ignore_codes:\n        - ORDER_LOCKED\n        - RATE_LIMIT_EXCEEDED\n        - ORDER_LOCKED\n"
        )
    )
    assert problems == [
        "tools[0].circuit_breaker.ignore_codes[1]: the breaker can only ignore a code the contract declares "
        "(or output_invalid); RATE_LIMIT_EXCEEDED is not one (line 35)",
        "tools[0].circuit_breaker.ignore_codes[2]: the code ORDER_LOCKED is ignored twice (also "
        "ignore_codes[0]) (line 36)",
    ]


def test_not_a_list_nor_text_is_refused_at_its_path():
    assert problems_of(with_breaker("      ignore_codes: ORDER_LOCKED\n")) == [
        "tools[0].circuit_breaker.ignore_codes: ignore_codes is a list of error codes (line 33)"
    ]
    assert problems_of(with_breaker("      ignore_codes: [7]\n")) == [
        "tools[0].circuit_breaker.ignore_codes[0]: an ignored code is an error code (text) (line 33)"
    ]

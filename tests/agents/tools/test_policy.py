"""The error policy's maths (``agents.tools.policy``): pure, checked over many policies with Hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.tools.policy import GIVE_UP, RETRY, after_failure, attempts_allowed, backoff_ms, policy_for

backoffs = st.builds(
    lambda kind, base, extra, jitter: {"kind": kind, "base_ms": base, "cap_ms": base + extra, "jitter": jitter},
    st.sampled_from(["fixed", "exponential"]),
    st.integers(1, 100_000),
    st.integers(0, 1_000_000),
    st.floats(0, 1),
)
draws = st.floats(0, 1, exclude_max=True)


@given(backoffs, st.integers(1, 500), draws)
def test_a_wait_is_never_over_the_cap_nor_under_what_jitter_may_take_off(backoff, retry, draw):
    wait = backoff_ms(backoff, retry, draw)
    assert 0 <= wait <= backoff["cap_ms"]
    unjittered = backoff_ms({**backoff, "jitter": 0}, retry, draw)
    assert wait >= unjittered * (1 - backoff["jitter"]) - 1


@given(backoffs, st.integers(1, 60))
def test_without_jitter_exponential_doubles_from_base_until_the_cap_and_fixed_stays(backoff, retry):
    plain = {**backoff, "jitter": 0}
    expected = backoff["base_ms"] * (2 ** (retry - 1) if backoff["kind"] == "exponential" else 1)
    assert backoff_ms(plain, retry, 0.5) == min(expected, backoff["cap_ms"])


@given(backoffs, st.integers(1, 30), draws)
def test_exponential_waits_never_shrink_from_one_retry_to_the_next(backoff, retry, draw):
    plain = {**backoff, "kind": "exponential", "jitter": 0}
    assert backoff_ms(plain, retry + 1, draw) >= backoff_ms(plain, retry, draw)


@given(st.integers(0, 100), st.integers(1, 120), draws)
def test_a_retryable_code_retries_exactly_max_retries_times(max_retries, attempt, draw):
    policy = policy_for({"E": {"code": "E", "retryable": True, "max_retries": max_retries}}, "E")
    step = after_failure(policy, attempt, draw)
    assert step.next == (RETRY if attempt <= max_retries else GIVE_UP)
    assert attempts_allowed(policy) == max_retries + 1


@given(st.integers(1, 50), draws)
def test_undeclared_and_not_retryable_codes_give_up_at_once(attempt, draw):
    undeclared = policy_for({}, "WHATEVER")
    assert not undeclared.declared and after_failure(undeclared, attempt, draw).next == GIVE_UP
    declared = policy_for({"E": {"code": "E", "retryable": False}}, "E")
    assert declared.declared and after_failure(declared, attempt, draw).next == GIVE_UP


def test_the_examples_of_the_contract_fields():
    exponential = {"kind": "exponential", "base_ms": 200, "cap_ms": 2000, "jitter": 0}
    assert [backoff_ms(exponential, n, 0.9) for n in range(1, 7)] == [200, 400, 800, 1600, 2000, 2000]
    assert backoff_ms({**exponential, "jitter": 0.5}, 1, 0.5) == 150  # a quarter off: half the jitter drawn
    assert backoff_ms({"kind": "fixed", "base_ms": 500, "cap_ms": 500}, 9, 0.0) == 500
    with pytest.raises(ValueError):
        backoff_ms(exponential, 0, 0.0)

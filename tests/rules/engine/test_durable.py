"""The durable backend: same answers as the reference, and a clear refusal beyond durable-rules' limits."""

from __future__ import annotations

import copy
import datetime as dt
import gc
import math
import random
import threading

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from rules.engine import Candidate, CompileError, compile_config, evaluate
from rules.engine import durable as durable_backend
from rules.engine.compiler import point_spec
from rules.engine.interpreter import interpreted_matcher
from tests.support import strategies as s
from tests.support.engine import NOON_UTC, REFUND_CASES, REFUND_FIELDS, ROUTING_CASES, ROUTING_FIELDS, SEED_SNAPSHOT

CONFIG = compile_config(SEED_SNAPSHOT, revision=1, backend="durable")
ROUTING = CONFIG.point("intent_routing")
REFUND = CONFIG.point("refund_approval")
# The same seed compiled to generated code (the default backend): both must answer alike.
GENERATED_ROUTING = compile_config(SEED_SNAPSHOT, revision=1).point("intent_routing")
LIMIT = durable_backend.MAX_PENDING_TESTS


def _request(candidate):
    return Candidate(*candidate) if candidate else None


def _outcome(call):
    """What a call does: its answer, or the type of what it raised."""
    try:
        return ("answer", call())
    except Exception as exc:
        return ("raised", type(exc))


def _point(rules, *, facts=None, whitelist=(), key="p"):
    raw = {
        "key": key,
        "facts": facts or {},
        "outcomes": ["a", "b"],
        "candidate_whitelist": list(whitelist),
        "default_outcome": "a",
        "rules": rules,
    }
    return point_spec(raw, {"limit": 10.0})


def _rule(i, conditions, **kw):
    return {"key": f"r{i:04d}", "priority": 1, "category": "risk", "outcome": "b", "conditions": conditions, **kw}


def _must_not_be_asked(*args):
    raise AssertionError(f"the reference decided {args!r}")


def _everything_hits(n):
    return (1 << n) - 1


# --- the seed scenarios, decided by durable-rules --------------------------------------------------


@pytest.mark.parametrize(ROUTING_FIELDS, ROUTING_CASES)
def test_intent_routing(text, candidate, decision, ruled_by, rule, overridden):
    d = evaluate(ROUTING, text=text, candidate=Candidate(*candidate), now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.rule.key if d.rule else None, d.overridden) == (
        decision,
        ruled_by,
        rule,
        overridden,
    )
    assert d == evaluate(GENERATED_ROUTING, text=text, candidate=Candidate(*candidate), now=NOON_UTC)


def test_reason_and_matches_in_priority_order():
    d = evaluate(ROUTING, text="我要投诉", candidate=None, now=NOON_UTC)
    assert d.reason == "high_risk_keyword: keyword 投诉 (list high_risk)"
    d = evaluate(ROUTING, text="退款不给就投诉", candidate=Candidate("refund_request", 0.2), now=NOON_UTC)
    assert [m.key for m in d.matched_rules] == [
        "high_risk_keyword",
        "refund_trigger",
        "low_confidence",
        "candidate_not_whitelisted",
    ]


def test_requests_without_a_candidate():
    settled = evaluate(ROUTING, text="我要退钱", candidate=None, now=NOON_UTC)
    assert (settled.decision, settled.needs_candidate) == ("refund_review", False)
    ask = evaluate(ROUTING, text="你好", candidate=None, now=NOON_UTC)
    assert (ask.decision, ask.ruled_by, ask.needs_candidate, ask.matched_rules) == (None, None, True, ())


@pytest.mark.parametrize(REFUND_FIELDS, REFUND_CASES)
def test_refund_approval(amount, decision, ruled_by):
    d = evaluate(REFUND, facts={"refund_amount": amount}, now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.needs_candidate) == (decision, ruled_by, False)


def test_full_width_input(seed_snapshot):
    seed_snapshot["keyword_lists"][0]["terms"].append("Refund")
    point = compile_config(seed_snapshot, revision=2, backend="durable").point("intent_routing")
    for text in ("ＲＥＦＵＮＤ please", "rEfUnD now", "打１２３１５"):
        assert evaluate(point, text=text, now=NOON_UTC).decision == "human_handoff", text


# --- the same decisions as the native backend, for random configurations and requests -------------


REQUESTS = st.lists(
    st.tuples(s.texts, s.candidates, s.facts(), s.states, s.moments, s.sessions()), min_size=1, max_size=4
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(s.snapshot(), s.snapshot(max_rules=40)), REQUESTS)
def test_durable_backend_decides_like_the_native_one(snapshot, requests):
    native = compile_config(snapshot, revision=1, backend="native").point("p")
    try:
        durable = compile_config(snapshot, revision=1, backend="durable").point("p")
    except CompileError as refused:  # a point beyond durable-rules' limits (never seen so far)
        assert "more than the 64 it can evaluate at once" in str(refused)
        reject()
    durable.matcher._reference = _must_not_be_asked  # requests of the declared types are durable-rules' own
    for text, candidate, facts, state, now, session in requests:
        kwargs = {"text": text, "candidate": _request(candidate), "facts": facts, "session_state": state, "now": now}
        kwargs["session"] = session
        assert evaluate(durable, **kwargs) == evaluate(native, **kwargs)


@settings(max_examples=300, deadline=None)
@given(
    s.snapshot(),
    st.lists(
        st.tuples(
            st.integers(0, 15), s.wild_candidates, s.wild_facts(), s.wild_states, s.moments, s.sessions(wild=True)
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_values_durable_rules_cannot_represent_get_the_reference_answer(snapshot, requests):
    # Huge integers, NaN, texts with quotes or NUL or of 70,000 characters, values of the wrong type:
    # the answer, or the exception, is always the reference interpreter's.
    spec = compile_config(snapshot, revision=1, backend="durable").point("p")
    reference = interpreted_matcher(spec.spec)
    for mask, candidate, facts, state, now, session in requests:
        cand, conf = candidate if candidate else (None, None)
        args = (mask, cand, conf, facts, state, now, session)
        assert _outcome(lambda a=args: spec.matcher(*a)) == _outcome(lambda a=args: reference(*a))


@pytest.mark.parametrize(
    ("value", "op", "threshold", "holds"),
    [
        (2**53 + 1, ">", float(2**53), True),  # a double would round 2**53 + 1 down to 2**53
        (2**53 + 1, "==", float(2**53), False),
        (10**30, ">=", 1e30, False),  # 1e30 is 1000000000000000019884624838656
        (float("nan"), "!=", 1.0, True),
        (float("inf"), ">", 1e308, True),
        (0.30000000000000004, ">", 0.3, True),
        (5e-324, ">", 0.0, True),
        (1e-05, "<", math.nextafter(1e-05, 1), True),
        (1e20, "==", 1e20 + 16384, False),
    ],
)
def test_numbers_compare_exactly(value, op, threshold, holds):
    snapshot = {
        "thresholds": [{"key": "t", "value": threshold}],
        "points": [
            {
                "key": "p",
                "facts": {"n": "number"},
                "outcomes": ["a", "b"],
                "default_outcome": "a",
                "rules": [_rule(0, [{"fact": "n", "op": op, "threshold": "t"}])],
            }
        ],
    }
    point = compile_config(snapshot, revision=1, backend="durable").point("p")
    assert point.matcher(0, None, None, {"n": value}, None, NOON_UTC) == ((0,) if holds else ())


def test_texts_are_compared_as_texts():
    odd = ["", '"', "\\", 'a"b', "a\\b", "o1\x00", "退款", "\U0001f600", "x" * 10_000]
    rules = [_rule(i, [{"candidate_in": [text]}]) for i, text in enumerate(odd)]
    rules += [_rule(100 + i, [{"session_state_in": [text]}]) for i, text in enumerate(odd)]
    spec = _point(rules, whitelist=odd)
    durable, reference = durable_backend.durable_matcher(spec), interpreted_matcher(spec)
    for text in [*odd, "x" * 10_001, "x" * 40_000, "o1", "a", "b"]:
        assert durable(0, text, 0.5, {}, text, NOON_UTC) == reference(0, text, 0.5, {}, text, NOON_UTC)


def test_a_naive_clock_raises_like_the_reference():
    spec = _point([_rule(0, [], effective_from="2026-01-01T00:00:00Z")])
    naive = dt.datetime(2026, 6, 1, 12, 0)
    with pytest.raises(TypeError):
        interpreted_matcher(spec)(0, None, None, {}, None, naive)
    with pytest.raises(TypeError):
        durable_backend.durable_matcher(spec)(0, None, None, {}, None, naive)


# --- the limits of durable-rules, and the clear refusal beyond them -------------------------------


def _independent(n):
    """n rules, each on its own keyword list: with every list hit, n tests hold at once."""
    return _point([_rule(i, [{"input_contains": f"l{i}"}]) for i in range(n)])


def _behind_a_shared_test(n):
    """n rules `l0 and amount > i`: the comparisons follow the shared test and can all hold at once."""
    rules = [_rule(i, [{"input_contains": "l0"}, {"fact": "amount", "op": ">", "value": i}]) for i in range(n)]
    return _point(rules, facts={"amount": "number"})


def test_64_conditions_that_hold_at_once_are_evaluated():
    for spec, request in (
        (_independent(LIMIT), (_everything_hits(LIMIT), None, None, {}, None, NOON_UTC)),
        (_behind_a_shared_test(LIMIT), (1, None, None, {"amount": 1000}, None, NOON_UTC)),
    ):
        assert durable_backend.durable_matcher(spec)(*request) == tuple(range(LIMIT))


@pytest.mark.parametrize("build", [_independent, _behind_a_shared_test])
def test_beyond_64_the_point_is_refused_at_compile_time(build):
    with pytest.raises(CompileError) as refused:
        durable_backend.durable_matcher(build(LIMIT + 1))
    assert str(refused.value) == (
        "durable backend: point p has 65 conditions that can hold at once, more than the 64 it can evaluate at once; "
        "use the native backend"
    )


def test_what_the_refusal_prevents():
    # Without the guard, durable-rules' alpha matcher overflows its 64-entry stack (error 303) when
    # all 65 conditions hold; the matcher reports it and stays usable for other requests.
    for spec, worst, fine in (
        (_independent(LIMIT + 1), (_everything_hits(LIMIT + 1), {}), (_everything_hits(LIMIT), {})),
        (_behind_a_shared_test(LIMIT + 1), (1, {"amount": 1000}), (1, {"amount": 63.5})),
    ):
        matcher = durable_backend._DurableMatcher(spec, enforce_limits=False)
        with pytest.raises(durable_backend.DurableEngineError, match="error code: 303"):
            matcher(worst[0], None, None, worst[1], None, NOON_UTC)
        assert matcher(fine[0], None, None, fine[1], None, NOON_UTC) == tuple(range(LIMIT))


def test_conditions_that_exclude_each_other_do_not_count():
    # One candidate, one state: 300 equality tests on them hold one at a time.
    outcomes = [f"o{i}" for i in range(150)]
    rules = [_rule(i, [{"candidate_in": [o]}]) for i, o in enumerate(outcomes)]
    rules += [_rule(150 + i, [{"session_state_in": [o]}]) for i, o in enumerate(outcomes)]
    matcher = durable_backend.durable_matcher(_point(rules))
    assert matcher(0, "o7", 0.9, {}, "o9", NOON_UTC) == (7, 159)


def test_other_limits_are_refused_at_compile_time():
    # 512 tests after one shared test: durable-rules would hang; 257 rules ending on the same test:
    # error 108; a fact of more than 254 fields: error 302; constants it cannot represent exactly.
    cases = {
        "different tests follow one shared test": _point(
            [_rule(i, [{"fact": "n", "op": "==", "value": i}]) for i in range(512)], facts={"n": "number"}
        ),
        "rules end on the same conditions": _point([_rule(i, []) for i in range(256)]),
        "fact fields": _point([_rule(0, [{"input_contains": f"l{i}"} for i in range(252)])]),
        "not a number durable-rules compares exactly": _point(
            [_rule(0, [{"fact": "n", "op": ">", "value": 2**60}])], facts={"n": "integer"}
        ),
    }
    for why, spec in cases.items():
        with pytest.raises(CompileError, match=why):
            durable_backend.durable_matcher(spec)
    durable_backend.durable_matcher(_point([_rule(i, []) for i in range(255)]))
    widest = durable_backend.durable_matcher(_point([_rule(0, [{"input_contains": f"l{i}"} for i in range(251)])]))
    assert widest(_everything_hits(251), None, None, {}, None, NOON_UTC) == (0,)


def test_no_session_outlives_its_request():
    # durable-rules fails (MemoryError) beyond 1,024 live sessions; each request deletes its own.
    matcher = ROUTING.matcher
    for i in range(3000):
        mask = i % 4
        expected = (0,) * (mask & 1) + (1,) * (mask >> 1 & 1)
        assert matcher(mask, None, None, {}, None, NOON_UTC) == expected


def test_discarded_rulesets_are_deleted():
    for revision in range(300):
        compile_config(SEED_SNAPSHOT, revision=revision, backend="durable")
    gc.collect()
    assert durable_backend._RETIRED
    evaluate(ROUTING, text="我要投诉", now=NOON_UTC)
    assert not durable_backend._RETIRED


def test_several_threads_get_their_own_answers():
    snapshot = copy.deepcopy(SEED_SNAPSHOT)
    point = compile_config(snapshot, revision=1, backend="durable").point("intent_routing")
    reference = interpreted_matcher(point.spec)
    outcomes = [*point.spec.outcomes, "stray"]
    failures: list[str] = []

    def work(seed_value):
        rnd = random.Random(seed_value)
        for _ in range(300):
            args = (rnd.randrange(4), rnd.choice([*outcomes, None]), rnd.random(), {}, None, NOON_UTC)
            if point.matcher(*args) != reference(*args):
                failures.append(repr(args))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_regular_expressions_are_matched_in_python_not_by_durable_rules():
    # durable-rules' own regexes give wrong answers: the match is computed by the condition's reference
    # reading and sent as a boolean field, for any value, without handing the request to the reference.
    spec = _point([_rule(0, [{"fact_matches": {"fact": "s", "pattern": r"^e\d{3}$"}}])], facts={"s": "string"})
    durable, reference = durable_backend.durable_matcher(spec), interpreted_matcher(spec)
    durable._reference = _must_not_be_asked
    for value in ["E123", "e123", "E1234", "xE123", "", "E12\x00", "E" + "1" * 70_000, None, 123, ["E123"]]:
        facts = {} if value is None else {"s": value}
        assert durable(0, None, None, facts, None, NOON_UTC) == reference(0, None, None, facts, None, NOON_UTC)

"""Property tests: the generated code agrees with the reference reading, and never raises."""

from __future__ import annotations

from hypothesis import given, settings

from rules.engine import Candidate, compile_config, evaluate
from tests.support import strategies as s


def _request(candidate):
    return Candidate(*candidate) if candidate else None


@settings(max_examples=300, deadline=None)
@given(s.snapshot(), s.texts, s.candidates, s.facts(), s.states, s.moments, s.sessions())
def test_native_backend_agrees_with_the_reference_interpreter(snapshot, text, candidate, facts, state, now, session):
    native = compile_config(snapshot, revision=1, backend="native").point("p")
    reference = compile_config(snapshot, revision=1, backend="interpreted").point("p")
    kwargs = {"text": text, "candidate": _request(candidate), "facts": facts, "session_state": state, "now": now}
    kwargs["session"] = session
    assert evaluate(native, **kwargs) == evaluate(reference, **kwargs)


@settings(max_examples=300, deadline=None)
@given(s.snapshot(), s.texts, s.candidates, s.facts(), s.states, s.moments, s.sessions(wild=True))
def test_any_request_that_fits_the_declared_types_gets_a_coherent_decision(
    snapshot, text, candidate, facts, state, now, session
):
    point = compile_config(snapshot, revision=1).point("p")
    d = evaluate(
        point, text=text, candidate=_request(candidate), facts=facts, session_state=state, now=now, session=session
    )
    spec = point.spec
    if d.needs_candidate:
        assert candidate is None and d.decision is None and spec.ask_when_no_candidate
    else:
        assert d.decision in spec.outcomes
    if d.ruled_by == "hard_rule":
        assert d.rule is not None and not d.rule.shadow and d.rule == next(m for m in d.matched_rules if not m.shadow)
        assert d.decision == d.rule.outcome
    else:
        assert all(m.shadow for m in d.matched_rules)
    if d.ruled_by == "llm_candidate":
        assert d.decision == candidate[0] and d.decision in spec.whitelist
    priorities = [(m.priority, m.key) for m in d.matched_rules]
    assert priorities == sorted(priorities)
    assert d.overridden == (candidate is not None and candidate[0] != d.decision)
    assert d.reason

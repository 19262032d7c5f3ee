"""The words of a decision's reason, prepared when a point is compiled.

A reason names what held in the winning rule ("high_risk_keyword: keyword 投诉 (list high_risk)").
Everything in it that comes from the configuration is formatted once here; a request only fills in its
own values (the keyword that hit, the fact's value, the candidate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rules.engine.model import ConditionSpec

Hits = Mapping[str, tuple[str, ...]]
Facts = Mapping[str, Any]
# (named keyword hits, facts, candidate outcome, confidence, session state) -> the words for one condition
Explainer = Callable[[Hits, Facts, str | None, float | None, str | None], str]


def _hhmm(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def explainer(c: ConditionSpec) -> Explainer:
    kind = c.kind
    if kind == "input_contains":
        key, tail = c.list_key, f" (list {c.list_key})"

        def keyword(hits: Hits, *_: Any) -> str:
            terms = hits.get(key)
            return f"keyword {terms[0] if terms else '?'}{tail}"

        return keyword
    if kind == "fact":
        fact = c.fact
        head = f"{fact} "
        rhs = f"{c.threshold_key} {c.value:g}" if c.threshold_key else repr(c.value)
        tail = f" {c.op} {rhs}"

        def fact_value(_hits: Hits, facts: Facts, *_: Any) -> str:
            return f"{head}{facts.get(fact)!r}{tail}"

        return fact_value
    if kind in {"candidate_in", "candidate_not_in", "candidate_not_in_whitelist"}:
        if kind == "candidate_not_in_whitelist":
            tail = " not in the whitelist"
        else:
            tail = f"{' not' if kind == 'candidate_not_in' else ''} in {', '.join(sorted(c.outcomes))}"

        def candidate(_hits: Hits, _facts: Facts, cand: str | None, *_: Any) -> str:
            return f"candidate {cand}{tail}"

        return candidate
    if kind == "candidate_confidence_below":
        tail = f" below {c.threshold_key} {c.value:g}"

        def confidence(_hits: Hits, _facts: Facts, _cand: str | None, conf: float | None, *_: Any) -> str:
            return f"confidence {conf:.2f}{tail}"

        return confidence
    if kind == "time_window":
        text = f"time within {_hhmm(c.window_start)}–{_hhmm(c.window_end)} {c.tz}"
    elif kind == "session_state_in":

        def session_state(_hits: Hits, _facts: Facts, _cand: str | None, _conf: float | None, state: str | None) -> str:
            return f"session state {state}"

        return session_state
    else:
        text = kind

    def fixed(*_: Any) -> str:
        return text

    return fixed

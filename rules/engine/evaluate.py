"""From a compiled point and one request's facts to a ``Decision``. The same for every backend:
backends only answer *which rules hold*; what that means is decided here, once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from rules.engine.compiler import CompiledPoint
from rules.engine.interpreter import condition_holds
from rules.engine.model import (
    DEFAULT,
    HARD_RULE,
    LLM_CANDIDATE,
    Candidate,
    ConditionSpec,
    Decision,
    RuleSpec,
)
from rules.normalize import normalize_text


def _explain(c: ConditionSpec, hits: Mapping[str, tuple[str, ...]], ctx: Mapping[str, Any]) -> str:
    kind = c.kind
    if kind == "input_contains":
        terms = hits.get(c.list_key, ())
        return f"keyword {terms[0] if terms else '?'} (list {c.list_key})"
    if kind == "fact":
        rhs = f"{c.threshold_key} {c.value:g}" if c.threshold_key else repr(c.value)
        return f"{c.fact} {ctx['facts'].get(c.fact)!r} {c.op} {rhs}"
    if kind == "candidate_in":
        return f"candidate {ctx['candidate']} in {', '.join(sorted(c.outcomes))}"
    if kind == "candidate_not_in":
        return f"candidate {ctx['candidate']} not in {', '.join(sorted(c.outcomes))}"
    if kind == "candidate_not_in_whitelist":
        return f"candidate {ctx['candidate']} not in the whitelist"
    if kind == "candidate_confidence_below":
        return f"confidence {ctx['confidence']:.2f} below {c.threshold_key} {c.value:g}"
    if kind == "time_window":
        start, end = c.window_start, c.window_end
        return (
            f"time within {start // 3600:02d}:{start % 3600 // 60:02d}–{end // 3600:02d}:{end % 3600 // 60:02d} {c.tz}"
        )
    if kind == "session_state_in":
        return f"session state {ctx['state']}"
    return kind


def _rule_reason(
    point: CompiledPoint, rule: RuleSpec, hits: Mapping[str, tuple[str, ...]], ctx: Mapping[str, Any]
) -> str:
    held = [_explain(c, hits, ctx) for c in rule.conditions if condition_holds(c, point.spec, **ctx)]
    # The key, not the description: reasons are read in logs and grepped; descriptions are prose.
    return f"{rule.key}: {'; '.join(held)}" if held else rule.key


def evaluate(
    point: CompiledPoint,
    *,
    text: str = "",
    candidate: Candidate | None = None,
    facts: Mapping[str, Any] | None = None,
    session_state: str | None = None,
    now: dt.datetime,
    known_hits: Mapping[str, Sequence[str]] | None = None,
    known_lists: Sequence[str] | None = None,
) -> Decision:
    """Decide one request. ``now`` is explicit so that tests and replays can fix the clock;
    ``known_hits`` adds keyword hits recorded when the (since masked) input was first decided;
    ``known_lists`` replaces the scan with the lists known to have hit (exact replays of masked input)."""
    spec = point.spec
    facts = facts or {}
    if known_lists is not None:
        # An exact replay under the revision a decision was made under: which lists hit is known.
        mask, found = 0, {}
        for bit, key in enumerate(spec.keyword_lists):
            if key in known_lists:
                mask |= 1 << bit
                found[bit] = list((known_hits or {}).get(key, ()))
        known_hits = None
    elif spec.keyword_lists and text:
        mask, found = point.scanner.scan(normalize_text(text))
    else:
        mask, found = 0, {}
    if known_hits and spec.keyword_lists:
        extra_mask, extra = point.scanner.known_hits(known_hits)
        mask |= extra_mask
        for bit, terms in extra.items():
            listed = found.setdefault(bit, [])
            listed.extend(t for t in terms if t not in listed)
    cand = candidate.decision if candidate is not None else None
    conf = candidate.confidence if candidate is not None else None
    indexes = point.matcher(mask, cand, conf, facts, session_state, now)
    rules = spec.rules
    views = point.views
    matched = tuple(views[i] for i in indexes)
    hits = point.scanner.named_hits(found) if found else {}
    outside = cand is not None and cand not in spec.outcomes
    winner = next((i for i in indexes if not rules[i].shadow), None)
    if winner is not None:
        rule = rules[winner]
        ctx = {"mask": mask, "candidate": cand, "confidence": conf, "facts": facts, "state": session_state, "now": now}
        return Decision(
            point=spec.key,
            decision=rule.outcome,
            ruled_by=HARD_RULE,
            rule=matched[indexes.index(winner)],
            matched_rules=matched,
            candidate=candidate,
            overridden=cand is not None and cand != rule.outcome,
            needs_candidate=False,
            reason=_rule_reason(point, rule, hits, ctx),
            keyword_hits=hits,
            candidate_outside_outcomes=outside,
        )
    if candidate is not None:
        if cand in spec.whitelist:
            return Decision(
                point=spec.key,
                decision=cand,
                ruled_by=LLM_CANDIDATE,
                rule=None,
                matched_rules=matched,
                candidate=candidate,
                overridden=False,
                needs_candidate=False,
                reason=f"no rule decided; candidate {cand} accepted (confidence {conf:.2f})",
                keyword_hits=hits,
            )
        # The whitelist is the set of outcomes a model may have accepted: anything else falls back to
        # the default even when no rule names it, so turning a whitelist rule to shadow is never unsafe.
        why = "is not an outcome of this point" if outside else "is not in the candidate whitelist"
        return Decision(
            point=spec.key,
            decision=spec.default_outcome,
            ruled_by=DEFAULT,
            rule=None,
            matched_rules=matched,
            candidate=candidate,
            overridden=cand != spec.default_outcome,
            needs_candidate=False,
            reason=f"no rule decided; candidate {cand} {why}; default outcome {spec.default_outcome}",
            keyword_hits=hits,
            candidate_outside_outcomes=outside,
        )
    if spec.ask_when_no_candidate:
        return Decision(
            point=spec.key,
            decision=None,
            ruled_by=None,
            rule=None,
            matched_rules=matched,
            candidate=None,
            overridden=False,
            needs_candidate=True,
            reason="no rule decided and no candidate was given; ask the LLM for one",
            keyword_hits=hits,
        )
    return Decision(
        point=spec.key,
        decision=spec.default_outcome,
        ruled_by=DEFAULT,
        rule=None,
        matched_rules=matched,
        candidate=None,
        overridden=False,
        needs_candidate=False,
        reason=f"no rule decided; default outcome {spec.default_outcome}",
        keyword_hits=hits,
    )

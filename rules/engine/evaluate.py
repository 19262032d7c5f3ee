"""From a compiled point and one request's facts to a ``Decision``. The same for every backend:
backends only answer *which rules hold*; what that means is decided here, once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from rules.engine.compiler import CompiledPoint
from rules.engine.explain import Explainer
from rules.engine.model import (
    DEFAULT,
    HARD_RULE,
    LLM_CANDIDATE,
    Candidate,
    Decision,
    MatchedRule,
    Request,
    RuledBy,
)
from rules.engine.normalize import normalize_text
from rules.engine.request import NO_SESSION, SessionView


def _rule_reason(
    point: CompiledPoint,
    index: int,
    hits: Mapping[str, tuple[str, ...]],
    facts: Mapping[str, Any],
    mask: int,
    cand: str | None,
    conf: float | None,
    state: str | None,
    now: dt.datetime,
    session: SessionView,
) -> str:
    rule = point.spec.rules[index]
    explainers: Sequence[Explainer] = point.explainers[index]
    if rule.combinator == "any":  # a matched "all" rule held on every condition; "any" on some of them
        request = Request(mask, cand, conf, facts, state, now, session)
        explainers = [e for c, e in zip(rule.conditions, explainers, strict=True) if c.holds(point.spec, request)]
    held = [e(hits, facts, cand, conf, state, session) for e in explainers]
    # The key, not the description: reasons are read in logs and grepped; descriptions are prose.
    return f"{rule.key}: {'; '.join(held)}" if held else rule.key


def keyword_prepass(point: CompiledPoint, text: str) -> tuple[int, dict[int, list[str]]]:
    """The text pre-pass of ``evaluate``: which of the point's keyword lists ``text`` hits (bitmask) and with
    which terms. Depends only on the point's lists and the text, so a replay can compute it once per distinct
    input and hand it to ``evaluate`` as ``prepass``."""
    if point.spec.keyword_lists and text:
        return point.scanner.scan(normalize_text(text))
    return 0, {}


# The engine's hot path: one function so that a decide pays no extra calls (bench/RESULTS.md).
def evaluate(
    point: CompiledPoint,
    *,
    text: str = "",
    candidate: Candidate | None = None,
    facts: Mapping[str, Any] | None = None,
    session_state: str | None = None,
    session: SessionView | None = None,
    now: dt.datetime,
    known_hits: Mapping[str, Sequence[str]] | None = None,
    known_lists: Sequence[str] | None = None,
    prepass: tuple[int, Mapping[int, list[str]]] | None = None,
) -> Decision:
    """Decide one request. ``session`` is what rules read of its session beyond ``session_state`` (fields,
    latest decisions' keyword lists; none when omitted). ``now`` is explicit so that tests and replays can
    fix the clock;
    ``known_hits`` adds keyword hits recorded when the (since masked) input was first decided;
    ``known_lists`` replaces the scan with the lists known to have hit (exact replays of masked input);
    ``prepass`` is ``keyword_prepass(point, text)`` computed before (``text`` is then not read again). It is
    never changed here, so one pre-pass may serve many requests."""
    spec = point.spec
    facts = facts or {}
    found: Mapping[int, list[str]]
    if known_lists is not None:
        # An exact replay under the revision a decision was made under: which lists hit is known.
        mask, known = 0, {}
        for bit, key in enumerate(spec.keyword_lists):
            if key in known_lists:
                mask |= 1 << bit
                known[bit] = list((known_hits or {}).get(key, ()))
        found = known
        known_hits = None
    elif prepass is not None:
        mask, found = prepass
    elif spec.keyword_lists and text:
        mask, found = point.scanner.scan(normalize_text(text))
    else:
        mask, found = 0, {}
    if known_hits and spec.keyword_lists:
        extra_mask, extra = point.scanner.known_hits(known_hits)
        mask |= extra_mask
        merged = {bit: list(terms) for bit, terms in found.items()}  # a shared pre-pass stays as it was
        for bit, terms in extra.items():
            listed = merged.setdefault(bit, [])
            listed.extend(t for t in terms if t not in listed)
        found = merged
    cand = candidate.decision if candidate is not None else None
    conf = candidate.confidence if candidate is not None else None
    sess = session if session is not None else NO_SESSION
    indexes = point.matcher(mask, cand, conf, facts, session_state, now, sess)
    views = point.views
    matched = tuple(map(views.__getitem__, indexes))
    hits = point.scanner.named_hits(found) if found else {}
    outside = cand is not None and cand not in spec.outcomes
    rule: MatchedRule | None = None
    overridden = needs_candidate = False
    for winner in indexes:
        if views[winner].shadow:
            continue
        rule = views[winner]
        decision: str | None = rule.outcome
        ruled_by: RuledBy | None = HARD_RULE
        overridden = cand is not None and cand != decision
        # The reason names the reading that made each hit ("keyword 投诉 via pinyin"), so an operator can
        # tell an evasion from a false positive; worked out only here, for the rule that decided.
        shown = point.scanner.explained_hits(normalize_text(text), found) if found and text else hits
        reason = _rule_reason(point, winner, shown, facts, mask, cand, conf, session_state, now, sess)
        break
    else:
        if cand is not None and cand in spec.whitelist:
            decision, ruled_by = cand, LLM_CANDIDATE
            reason = f"no rule decided; candidate {cand} accepted (confidence {conf:.2f})"
        elif candidate is not None:
            # The whitelist is the set of outcomes a model may have accepted: anything else falls back to
            # the default even when no rule names it, so turning a whitelist rule to shadow is never unsafe.
            decision, ruled_by = spec.default_outcome, DEFAULT
            overridden = cand != decision
            why = "is not an outcome of this point" if outside else "is not in the candidate whitelist"
            reason = f"no rule decided; candidate {cand} {why}; default outcome {decision}"
        elif spec.ask_when_no_candidate:
            decision, ruled_by, needs_candidate = None, None, True
            reason = "no rule decided and no candidate was given; ask the LLM for one"
        else:
            decision, ruled_by = spec.default_outcome, DEFAULT
            reason = f"no rule decided; default outcome {decision}"
    # Positional, in field order: one is built per request, and keywords cost twice as much here.
    return Decision(
        spec.key, decision, ruled_by, rule, matched, candidate, overridden, needs_candidate, reason, hits, outside
    )

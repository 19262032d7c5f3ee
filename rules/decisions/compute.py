"""Decide's pure step: a request checked against its compiled point, evaluated, and the engine's answer
overridden where the model's raw output held no valid candidate — what the decide service logs and what
the simulator shows, computed by the same function so that they cannot drift apart. No database.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from decision_service.digests import canonical_digest
from rules.engine import Candidate, CandidateParseError, CompiledPoint, Decision, evaluate, parse_candidate
from rules.engine.model import DEFAULT, HARD_RULE
from rules.engine.request import SessionView
from rules.errors import InvalidRequest


@dataclass(frozen=True)
class DecideRequest:
    """A validated request body (shape checked by the API; facts are checked here, against the point)."""

    point: str
    input: str = ""
    session_id: str = ""
    candidate: Candidate | None = None
    candidate_raw: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    tokens_prompt: int | None = None
    tokens_completion: int | None = None
    # Which model and prompt made the candidate, as the agent names them ("" when not sent).
    llm_model: str = ""
    llm_prompt_version: str = ""
    llm_latency_ms: int | None = None
    # With apply: the state the caller believes the session is in (the optimistic lock of a move).
    expected_state: str = ""

    def digest(self, *, apply: bool = False) -> str:
        body = {
            "apply": apply,
            "point": self.point,
            "input": self.input,
            "session_id": self.session_id,
            "candidate": None
            if self.candidate is None
            else [self.candidate.decision, self.candidate.confidence, self.candidate.reason],
            "candidate_raw": self.candidate_raw,
            "facts": self.facts,
            "tokens": [self.tokens_prompt, self.tokens_completion],
        }
        if self.expected_state:  # only when sent: the digests of requests without it stay as they were
            body["expected_state"] = self.expected_state
        if self.llm_model or self.llm_prompt_version or self.llm_latency_ms is not None:  # likewise
            body["llm"] = [self.llm_model, self.llm_prompt_version, self.llm_latency_ms]
        return canonical_digest(body, text="ascii")  # ASCII: a body may hold lone surrogates


@dataclass(frozen=True)
class Prepared:
    """The request checked against its point: the candidate to decide with, and why raw output held none."""

    candidate: Candidate | None
    parse_problem: str | None
    facts: Mapping[str, Any]


def _fact_problem(value: Any, declared: str) -> str | None:
    if declared in {"number", "integer"}:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a {'whole ' if declared == 'integer' else ''}number"
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        if declared == "integer" and not isinstance(value, int):
            return "must be a whole number"
        return None
    if declared == "boolean":
        return None if isinstance(value, bool) else "must be true or false"
    # NUL cannot be stored in PostgreSQL text or JSON: refuse it here rather than fail on insert.
    if declared == "string":
        if not isinstance(value, str):
            return "must be a string"
        return "must not contain NUL characters" if "\x00" in value else None
    if declared == "string_list":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not ok:
            return "must be a list of strings"
        return "must not contain NUL characters" if any("\x00" in v for v in value) else None
    return f"has an unknown declared type {declared}"


def facts_check(point: CompiledPoint, facts: Mapping[str, Any]) -> None:
    declared = point.spec.facts
    errors: dict[str, list[str]] = {}
    for name, value in facts.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            errors[name] = [f"'{name}' is not a fact of {point.spec.key} (declared: {known})."]
        elif value is not None and (problem := _fact_problem(value, declared[name])):
            errors[name] = [f"{problem} (declared {declared[name]})."]
    if errors:
        raise InvalidRequest("Some facts do not fit the decision point.", errors={"facts": errors})


def decision_prepare(*, point: CompiledPoint, request: DecideRequest) -> Prepared:
    """Check the request's facts against the point and read the candidate out of raw model output."""
    facts_check(point, request.facts)
    candidate = request.candidate
    parse_problem = None
    if request.candidate_raw is not None:
        try:
            candidate = parse_candidate(request.candidate_raw)
        except CandidateParseError as exc:
            parse_problem = str(exc)
    facts = {k: v for k, v in request.facts.items() if v is not None}
    return Prepared(candidate=candidate, parse_problem=parse_problem, facts=facts)


def decision_for_invalid_output(point: CompiledPoint, decision: Decision, problem: str) -> Decision:
    """Raw model output without a valid candidate: the default answers, unless a hard rule already did."""
    if decision.ruled_by == HARD_RULE:
        return decision
    spec = point.spec
    return Decision(
        point=spec.key,
        decision=spec.default_outcome,
        ruled_by=DEFAULT,
        rule=None,
        matched_rules=decision.matched_rules,
        candidate=None,
        overridden=False,
        needs_candidate=False,
        reason=f"the model output held no valid candidate ({problem}); default outcome {spec.default_outcome}",
        keyword_hits=decision.keyword_hits,
    )


@dataclass(frozen=True)
class Computed:
    """A request's decision and how long evaluating it took (µs, the override included)."""

    decision: Decision
    evaluated_us: int


def decision_compute(
    *,
    point: CompiledPoint,
    request: DecideRequest,
    prepared: Prepared,
    session_state: str | None,
    now: dt.datetime,
    session: SessionView | None = None,
) -> Computed:
    """Evaluate ``request`` (checked as ``prepared``) in ``session_state`` at ``now``, with what rules read of
    the session beyond its state (``session``, ``rules.decisions.session_data.session_view``); the default
    answers when raw model output held no valid candidate, unless a hard rule already did."""
    started = time.perf_counter_ns()
    decision = evaluate(
        point,
        text=request.input,
        candidate=prepared.candidate,
        facts=prepared.facts,
        now=now,
        session_state=session_state,
        session=session,
    )
    if prepared.parse_problem is not None:
        decision = decision_for_invalid_output(point, decision, prepared.parse_problem)
    return Computed(decision=decision, evaluated_us=(time.perf_counter_ns() - started) // 1000)


# -- what rules may read of a session whose state is only guessed ----------------------------------------


@dataclass(frozen=True)
class SessionSeen:
    """Exactly what a decide may evaluate on before it has read its session: the state this process last
    saw it in (``agents.sessions.reads``). A guess carries nothing else, so a point whose rules read
    anything else of a session must not be decided on one (``session_guess_allowed``)."""

    state: str


# What each kind of condition reads of the session: the kinds of ``rules.engine.conditions``, by name. A
# kind not listed (a new one, reading session fields say) turns the guess off for every point that uses
# it: the point is decided on the session as read, never on a guess that lacks what its rules read.
# tests/rules/decisions/test_session_guess_reads.py fails when a registered kind is missing here.
SESSION_READS: Mapping[str, frozenset[str]] = {
    "candidate_confidence_below": frozenset(),
    "candidate_in": frozenset(),
    "candidate_not_in": frozenset(),
    "candidate_not_in_whitelist": frozenset(),
    "fact": frozenset(),
    "fact_matches": frozenset(),
    "input_contains": frozenset(),
    "time_window": frozenset(),
    "session_state_in": frozenset({"state"}),
    "session_field": frozenset({"fields"}),
    "session_keyword_seen": frozenset({"recent decisions"}),
}
GUESSABLE = frozenset(f.name for f in fields(SessionSeen))


def point_session_reads(point: CompiledPoint) -> frozenset[str] | None:
    """What the point's rules read of a session (``SESSION_READS``); None when a kind's reads are unknown."""
    reads: set[str] = set()
    for rule in point.spec.rules:
        for condition in rule.conditions:
            known = SESSION_READS.get(condition.kind)
            if known is None:
                return None
            reads |= known
    return frozenset(reads)


# Per compiled point (by identity, the point kept so that its id is not reused), worked out once: the hot
# path asks on every decide with a session. Bounded: a few points per revision, revisions come and go.
_GUESS_ALLOWED_MAX = 1024
_guess_allowed: dict[int, tuple[CompiledPoint, bool]] = {}


def session_guess_allowed(point: CompiledPoint) -> bool:
    """Whether a decide of ``point`` may evaluate on a ``SessionSeen``: its rules read no more than it holds."""
    found = _guess_allowed.get(id(point))
    if found is not None and found[0] is point:
        return found[1]
    reads = point_session_reads(point)
    allowed = reads is not None and reads <= GUESSABLE
    if len(_guess_allowed) >= _GUESS_ALLOWED_MAX:
        _guess_allowed.clear()
    _guess_allowed[id(point)] = (point, allowed)
    return allowed

"""How decisions, logged decisions, replays and points look to the outside: one typed presenter each.

The decide API, the idempotent replay of a stored answer, the admin's why panel and replay view, and the
benchmark all describe a decision through these functions, so the shapes cannot drift apart. Built as
plain dicts rather than through serializers: ``decision_body`` is on the hot path of every agent turn.
"""

from __future__ import annotations

from typing import Any, TypedDict

from rules.decisions.decide import DecideResult
from rules.decisions.replay import Replay
from rules.engine import Candidate, CompiledPoint, Decision, MatchedRule
from rules.governance.simulate import Simulation
from rules.models import ChangeRequest, DecisionRecord


class RuleRef(TypedDict):
    key: str
    priority: int | None
    category: str


class MatchedRuleBody(TypedDict):
    key: str
    priority: int
    outcome: str
    shadow: bool


class CandidateBody(TypedDict):
    decision: str
    confidence: float | None
    reason: str


class DecisionView(TypedDict):
    """What the engine decided, with nothing about where it was logged."""

    point: str
    decision: str | None
    ruled_by: str | None
    rule: RuleRef | None
    matched_rules: list[MatchedRuleBody]
    candidate: CandidateBody | None
    overridden: bool
    needs_candidate: bool
    reason: str


class DecisionBody(DecisionView):
    """The answer to ``POST /api/v1/decisions``."""

    id: str | None
    revision: int
    evaluated_us: int
    created_at: str | None


class SimulationBody(DecisionView):
    """The answer to ``POST /api/v1/simulations``: a decision body without ``id``, never logged."""

    revision: int
    evaluated_us: int
    created_at: None
    change_request: int | None


class ReplaySide(TypedDict):
    decision: str | None
    ruled_by: str | None
    rule: RuleRef | None
    matched_rules: list[MatchedRuleBody]
    overridden: bool
    reason: str
    revision: int


class ReplayBody(TypedDict):
    recorded: ReplaySide
    replayed: ReplaySide
    identical: bool
    masked_facts: list[str]
    revision: int
    current: ReplaySide | None


def timestamp(value: Any) -> str:
    """UTC times as the API writes them: ISO 8601 with a ``Z``."""
    return str(value.isoformat().replace("+00:00", "Z"))


def rule_ref(rule: MatchedRule | None) -> RuleRef | None:
    return None if rule is None else {"key": rule.key, "priority": rule.priority, "category": rule.category}


def matched_rules_body(decision: Decision) -> list[MatchedRuleBody]:
    return [
        {"key": m.key, "priority": m.priority, "outcome": m.outcome, "shadow": m.shadow} for m in decision.matched_rules
    ]


def candidate_body(candidate: Candidate | None) -> CandidateBody | None:
    if candidate is None:
        return None
    return {"decision": candidate.decision, "confidence": candidate.confidence, "reason": candidate.reason}


def decision_view(d: Decision) -> DecisionView:
    return {
        "point": d.point,
        "decision": d.decision,
        "ruled_by": d.ruled_by,
        "rule": rule_ref(d.rule),
        "matched_rules": matched_rules_body(d),
        "candidate": candidate_body(d.candidate),
        "overridden": d.overridden,
        "needs_candidate": d.needs_candidate,
        "reason": d.reason,
    }


def decision_body(result: DecideResult) -> DecisionBody:
    """The decide answer; a stored answer replayed for a retry is built by the same function."""
    record = result.record
    body: Any = {"id": str(record.id) if record else None, **decision_view(result.decision)}
    body["revision"] = result.revision
    body["evaluated_us"] = result.evaluated_us
    body["created_at"] = timestamp(record.created_at) if record else None
    out: DecisionBody = body
    return out


def simulation_body(simulation: Simulation) -> SimulationBody:
    """The simulator's answer: what the decide answer would be, with nothing about a log row."""
    return {
        **decision_view(simulation.decision),
        "revision": simulation.revision,
        "evaluated_us": simulation.evaluated_us,
        "created_at": None,
        "change_request": simulation.change_request,
    }


def record_body(record: DecisionRecord) -> dict[str, Any]:
    """A logged decision as ``GET /api/v1/decisions/<id>`` shows it."""
    return {
        "id": str(record.id),
        "created_at": timestamp(record.created_at),
        "point": record.point,
        "agent": record.agent_name,
        "session_id": record.session_id,
        "input": record.input,
        "masked": record.masked,
        "facts": record.facts,
        "masked_facts": record.masked_facts,
        "candidate": None
        if not record.candidate_decision
        else {
            "decision": record.candidate_decision,
            "confidence": record.candidate_confidence,
            "reason": record.candidate_reason,
        },
        "candidate_raw": record.candidate_raw or None,
        "candidate_invalid": record.candidate_invalid,
        "decision": record.decision,
        "ruled_by": record.ruled_by,
        "rule": None
        if not record.rule_key
        else {"key": record.rule_key, "priority": record.rule_priority, "category": record.rule_category},
        "matched_rules": record.matched_rules,
        "keyword_hits": record.keyword_hits,
        "overridden": record.overridden,
        "reason": record.reason,
        "revision": record.revision,
        "engine": record.engine,
        "evaluated_us": record.evaluated_us,
        "tokens": {"prompt": record.tokens_prompt, "completion": record.tokens_completion},
        "llm": llm_body(record),
    }


def llm_body(record: DecisionRecord) -> dict[str, Any] | None:
    """Which model and prompt made the candidate, as the agent sent them; None when it sent nothing."""
    if not record.llm_model and not record.llm_prompt_version and record.llm_latency_ms is None:
        return None
    return {
        "model": record.llm_model or None,
        "prompt_version": record.llm_prompt_version or None,
        "latency_ms": record.llm_latency_ms,
    }


def replay_side(decision: Decision, revision: int) -> ReplaySide:
    return {
        "decision": decision.decision,
        "ruled_by": decision.ruled_by,
        "rule": rule_ref(decision.rule),
        "matched_rules": matched_rules_body(decision),
        "overridden": decision.overridden,
        "reason": decision.reason,
        "revision": revision,
    }


def replay_body(replay: Replay) -> ReplayBody:
    return {
        "recorded": replay_side(replay.recorded, replay.revision),
        "replayed": replay_side(replay.replayed, replay.revision),
        "identical": replay.identical,
        "masked_facts": list(replay.masked_facts),
        "revision": replay.revision,
        "current": None if replay.current is None else replay_side(replay.current, replay.current_revision),
    }


def point_body(point: CompiledPoint, revision: int) -> dict[str, Any]:
    spec = point.spec
    floor = spec.confidence_floor()
    return {
        "key": spec.key,
        "name": spec.name,
        "description": spec.description,
        "outcomes": sorted(spec.outcomes),
        "candidate_whitelist": sorted(spec.whitelist),
        "default_outcome": spec.default_outcome,
        "when_no_candidate": "ask" if spec.ask_when_no_candidate else "default",
        "facts": dict(spec.facts),
        "min_confidence": floor[1] if floor else None,
        "min_confidence_threshold": floor[0] if floor else None,
        # How a decision with ``apply`` moves a session: the runtime follows these instead of a copy of its own.
        "machine": spec.machine or None,
        "state_map": dict(spec.state_map),
        "fallback_state": spec.fallback_state or None,
        "revision": revision,
    }


def change_request_body(request: ChangeRequest) -> dict[str, Any]:
    """A change request as the staff API shows it."""
    from rules.governance.change_requests import (
        change_request_approvals_required,
        change_request_diff_rows,
        change_request_digest,
    )

    impact = dict(request.impact or {})
    impact.setdefault("status", request.impact_status or None)
    return {
        "id": request.pk,
        "state": request.state,
        "risk": request.risk,
        "author": request.author_name,
        "reason": request.reason,
        "created_at": timestamp(request.created_at),
        "apply_at": timestamp(request.apply_at) if request.apply_at else None,
        "base_revision": request.base_revision,
        "applied_revision": request.applied_revision,
        # The English sentence: the message id and parameters stored beside it are for the admin's languages.
        "risks": [{"record": r["record"], "why": r["why"]} for r in request.risks],
        # What an approval must name (POST …/approve {"digest"}): it changes whenever the request is edited.
        "digest": change_request_digest(request.changes),
        "diff": change_request_diff_rows(request),
        "approvals": [
            {"user": a.user.get_username(), "at": timestamp(a.at)} for a in request.approvals.select_related("user")
        ],
        "required_approvals": change_request_approvals_required(),
        "superseded_by": request.superseded_by,
        "failure": request.failure or None,
        "impact": {
            "status": impact.get("status"),
            "evaluated": impact.get("evaluated"),
            "changed": impact.get("changed"),
            "masked_facts": impact.get("masked_facts"),
            "high_risk_flipped": impact.get("high_risk_flipped"),
            "matrix": impact.get("matrix"),
            "examples": impact.get("examples"),
            "broken_cases": impact.get("broken_cases"),
        },
    }

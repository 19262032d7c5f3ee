"""Deciding a request and logging it: the request path every agent runtime calls on each turn."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.errors import MachineMismatch, SessionClosed, UnknownSession
from agents.models import AgentRuntime, Session
from agents.services.sessions import (
    DECISION_MOVE_NOT_ALLOWED,
    allowed_targets,
    locked_sessions,
    move_session,
    record_anomaly,
)
from rules.engine import Candidate, CandidateParseError, CompiledPoint, Decision, evaluate, parse_candidate
from rules.engine.compiler import CompileError
from rules.errors import EngineUnavailable, IdempotencyConflict, InvalidRequest, NotFound, PointNotAllowed, UnknownPoint
from rules.masking import Masker
from rules.models import CandidateRequestCount, ConfigRevision, DecisionRecord
from rules.runtime import engines

CANDIDATE_NOT_AN_OUTCOME = "candidate_not_an_outcome"
INVALID_CANDIDATE_OUTPUT = "invalid_candidate_output"


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
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))  # ASCII: always encodable
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class DecideResult:
    """``record`` is the logged decision; it is None when the point asks for a candidate first."""

    decision: Decision
    revision: int
    evaluated_us: int
    record: DecisionRecord | None
    replayed: bool = False
    session_move: dict[str, Any] | None = None


def _allowed(agent: AgentRuntime, point_key: str) -> bool:
    return agent.points.filter(key=point_key).exists()


def point_for_agent(*, agent: AgentRuntime, point_key: str) -> tuple[CompiledPoint, int]:
    """The compiled point an agent may call, with the revision it comes from."""
    try:
        config = engines.current()
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc
    point = config.point(point_key)
    if point is None:
        raise UnknownPoint(f"There is no decision point '{point_key}'.")
    if not _allowed(agent, point_key):
        raise PointNotAllowed(f"Agent '{agent.name}' may not call decision point '{point_key}'.")
    return point, config.revision


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


def _count_candidate_request(agent: AgentRuntime, point: str, day: dt.date) -> None:
    with transaction.atomic():
        row, _ = CandidateRequestCount.objects.select_for_update().get_or_create(point=point, agent=agent, day=day)
        row.count += 1
        row.save(update_fields=["count"])


def _existing(agent: AgentRuntime, key: str, digest: str) -> DecisionRecord | None:
    record = DecisionRecord.objects.filter(agent=agent, idempotency_key=key).first()
    if record is not None and record.request_digest != digest:
        raise IdempotencyConflict(
            f"Idempotency-Key '{key}' was already used with a different request body.",
        )
    return record


def decision_make(
    *,
    agent: AgentRuntime,
    request: DecideRequest,
    idempotency_key: str = "",
    now: dt.datetime | None = None,
    apply: bool = False,
) -> DecideResult:
    """Decide, and log the decision in the same transaction; an answered decision is always logged.

    With a ``session_id`` of an existing session, rules see its state. With ``apply``, the decision
    also moves the session through the point's outcome → state map (or its fallback, with an anomaly,
    when the machine forbids the mapped move): decision, move and log commit together or not at all.
    With an ``idempotency_key``, a retry of the same body returns the decision already made (one log
    row); the same key with another body is refused.
    """
    digest = request.digest(apply=apply)
    if idempotency_key:
        existing = _existing(agent, idempotency_key, digest)
        if existing is not None:
            return _result_from_record(existing)
    point, revision = point_for_agent(agent=agent, point_key=request.point)
    facts_check(point, request.facts)
    candidate = request.candidate
    parse_problem = None
    if request.candidate_raw is not None:
        try:
            candidate = parse_candidate(request.candidate_raw)
        except CandidateParseError as exc:
            parse_problem = str(exc)
    now = now or timezone.now()
    facts = {k: v for k, v in request.facts.items() if v is not None}
    try:
        with transaction.atomic():
            session = _session_for(agent, request.session_id, point, apply)
            started = time.perf_counter_ns()
            decision = evaluate(
                point,
                text=request.input,
                candidate=candidate,
                facts=facts,
                now=now,
                session_state=session.state if session else None,
            )
            if parse_problem is not None:
                decision = _invalid_output_decision(point, decision, parse_problem)
            evaluated_us = (time.perf_counter_ns() - started) // 1000
            if decision.needs_candidate:
                _count_candidate_request(agent, point.spec.key, now.date())
                return DecideResult(
                    decision=decision,
                    revision=revision,
                    evaluated_us=evaluated_us,
                    record=None,
                    session_move=_stay(session) if apply and session else None,
                )
            record = _record(agent, request, point, decision, revision, evaluated_us, now, idempotency_key, digest)
            record.session_state = session.state if session else ""
            record.save(force_insert=True)
            start = _stay(session) if session is not None else None
            anomalies = []
            if parse_problem is not None:
                anomalies.append((INVALID_CANDIDATE_OUTPUT, parse_problem, record.candidate_raw))
            if decision.candidate_outside_outcomes and candidate is not None:
                detail = f"candidate '{candidate.decision}' is not an outcome of {point.spec.key}"
                anomalies.append((CANDIDATE_NOT_AN_OUTCOME, detail, ""))
            for code, detail, raw in anomalies:
                record_anomaly(
                    session,
                    agent=agent,
                    session_id=request.session_id,
                    point=point.spec.key,
                    code=code,
                    detail=detail,
                    raw=raw,
                    decision_id=record.pk,
                )
            if apply and session is not None and start is not None:
                # From where the session was when the request came: an anomaly above may have handed it off.
                record.session_move = {**_apply(session, point, record), "from": start["from"]}
                record.save(update_fields=["session_move"])
    except IntegrityError:
        # Two retries with one key raced: the other one logged it first.
        if idempotency_key:
            existing = _existing(agent, idempotency_key, digest)
            if existing is not None:
                return _result_from_record(existing)
        raise
    # Answer from the record, as a retry with the same Idempotency-Key will be: masked where it was masked.
    return _result_from_record(record, replayed=False)


def _session_for(agent: AgentRuntime, session_id: str, point: CompiledPoint, apply: bool) -> Session | None:
    """The session the decision is about, locked for the transaction; refusals for apply=true."""
    if not session_id:
        if apply:
            raise InvalidRequest("apply needs a session_id.", errors={"session_id": ["Required with apply."]})
        return None
    session = locked_sessions(Session.objects.filter(agent=agent, key=session_id)).first()
    if not apply:
        return session
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'; create it first.")
    if session.state in session.machine.terminal_states:
        raise SessionClosed(
            f"The session ended in '{session.state}'.", extra={"state": session.state, "seq": session.seq}
        )
    if point.spec.machine != session.machine.key:
        raise MachineMismatch(
            f"Decision point {point.spec.key} moves sessions of "
            f"'{point.spec.machine or 'no machine'}', not of '{session.machine.key}'."
        )
    return session


def _stay(session: Session) -> dict[str, Any]:
    return {"from": session.state, "state": session.state, "seq": session.seq}


def _apply(session: Session, point: CompiledPoint, record: DecisionRecord) -> dict[str, Any]:
    """Move the session as the point maps the final decision; the fallback when the machine forbids it."""
    before = _stay(session)
    machine = session.machine
    if session.state == machine.handoff_state and session.handoff_reason:
        return before  # the model-failure policy just handed it to a person: leave it there
    target = point.spec.state_map.get(record.decision)
    if target is None or target == session.state:
        return before
    if target in allowed_targets(session):
        move = move_session(
            session, to=target, kind="decision", actor=record.agent_name, reason=record.reason, decision_id=record.pk
        )
        return {"from": move.from_state, "state": move.state, "seq": move.seq}
    # The fallback is the point's safe place (seed 001: clarify). It is a move like any other: taken only
    # where the machine allows it. From a state that cannot go there (a person's queue, a refund under
    # review, or the very state the mapping was refused) the session stays where it is.
    fallback = point.spec.fallback_state
    can_fall_back = bool(fallback) and fallback != session.state and fallback in allowed_targets(session)
    detail = f"{record.decision} maps to '{target}', which {machine.key} does not allow from '{session.state}'" + (
        f"; fell back to '{fallback}'" if can_fall_back else f"; stayed in '{session.state}'"
    )
    handoff = record_anomaly(
        session,
        agent=session.agent,
        session_id=session.key,
        point=point.spec.key,
        code=DECISION_MOVE_NOT_ALLOWED,
        detail=detail,
        decision_id=record.pk,
    )
    if handoff is not None:
        return {"from": before["from"], "state": handoff.state, "seq": handoff.seq}
    if not can_fall_back:
        return before
    move = move_session(
        session, to=fallback, kind="fallback", actor=record.agent_name, reason=detail, decision_id=record.pk
    )
    return {"from": move.from_state, "state": move.state, "seq": move.seq}


def _invalid_output_decision(point: CompiledPoint, decision: Decision, problem: str) -> Decision:
    """Raw model output without a valid candidate: the default answers, unless a hard rule already did."""
    if decision.ruled_by == "hard_rule":
        return decision
    spec = point.spec
    return Decision(
        point=spec.key,
        decision=spec.default_outcome,
        ruled_by="default",
        rule=None,
        matched_rules=decision.matched_rules,
        candidate=None,
        overridden=False,
        needs_candidate=False,
        reason=f"the model output held no valid candidate ({problem}); default outcome {spec.default_outcome}",
        keyword_hits=decision.keyword_hits,
    )


def _masker(point_key: str) -> Masker:
    from rules.models import DecisionPoint  # read per request: masking settings are not in the engine snapshot

    row = DecisionPoint.objects.filter(key=point_key).values_list("mask_skip", "mask_patterns").first()
    skip, patterns = row if row else ([], {})
    return Masker(skip=skip, extra=patterns)


def _record(
    agent: AgentRuntime,
    request: DecideRequest,
    point: CompiledPoint,
    decision: Decision,
    revision: int,
    evaluated_us: int,
    now: dt.datetime,
    idempotency_key: str,
    digest: str,
) -> DecisionRecord:
    masker = _masker(point.spec.key)
    masked_input = masker.mask(request.input)
    counts = dict(masked_input.counts)
    candidate = decision.candidate

    def masked(text: str) -> str:
        result = masker.mask(text)
        for kind, n in result.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return result.text

    rule = decision.rule
    return DecisionRecord(
        created_at=now,
        point=point.spec.key,
        agent=agent,
        agent_name=agent.name,
        session_id=request.session_id,
        input=masked_input.text,
        facts=dict(request.facts),
        candidate_decision=candidate.decision if candidate else "",
        candidate_confidence=candidate.confidence if candidate else None,
        candidate_reason=masked(candidate.reason) if candidate else "",
        candidate_raw=masked(request.candidate_raw or ""),
        candidate_invalid=request.candidate_raw is not None and candidate is None,
        decision=decision.decision or "",
        ruled_by=decision.ruled_by or "",
        rule_key=rule.key if rule else "",
        rule_priority=rule.priority if rule else None,
        rule_category=rule.category if rule else "",
        matched_rules=[
            {"key": m.key, "priority": m.priority, "category": m.category, "outcome": m.outcome, "shadow": m.shadow}
            for m in decision.matched_rules
        ],
        keyword_hits={k: list(v) for k, v in decision.keyword_hits.items()},
        overridden=decision.overridden,
        reason=masked(decision.reason),
        revision=revision,
        engine=point.backend,
        evaluated_us=evaluated_us,
        tokens_prompt=request.tokens_prompt,
        tokens_completion=request.tokens_completion,
        idempotency_key=idempotency_key,
        request_digest=digest,
        masked=counts,
    )


def _result_from_record(record: DecisionRecord, *, replayed: bool = True) -> DecideResult:
    decision = record_decision(record)
    return DecideResult(
        decision=decision,
        revision=record.revision,
        evaluated_us=record.evaluated_us,
        record=record,
        replayed=replayed,
        session_move=record.session_move,
    )


def record_candidate(record: DecisionRecord) -> Candidate | None:
    if not record.candidate_decision or record.candidate_confidence is None:
        return None
    return Candidate(record.candidate_decision, record.candidate_confidence, record.candidate_reason)


def record_decision(record: DecisionRecord) -> Decision:
    """The logged decision, read back as an engine ``Decision``."""
    from rules.engine.model import MatchedRule

    matched = tuple(MatchedRule(**m) for m in record.matched_rules)
    rule = next((m for m in matched if m.key == record.rule_key and not m.shadow), None)
    return Decision(
        point=record.point,
        decision=record.decision,
        ruled_by=record.ruled_by,  # type: ignore[arg-type]
        rule=rule,
        matched_rules=matched,
        candidate=record_candidate(record),
        overridden=record.overridden,
        needs_candidate=False,
        reason=record.reason,
        keyword_hits={k: tuple(v) for k, v in record.keyword_hits.items()},
    )


def same_outcome(a: Decision, b: Decision | None) -> bool:
    """Whether two decisions agree on everything a replay checks (the reason's wording may differ)."""
    if b is None:
        return False
    return (
        a.decision == b.decision
        and a.ruled_by == b.ruled_by
        and (a.rule.key if a.rule else None) == (b.rule.key if b.rule else None)
        and [(m.key, m.shadow) for m in a.matched_rules] == [(m.key, m.shadow) for m in b.matched_rules]
        and a.overridden == b.overridden
    )


@dataclass(frozen=True)
class Replay:
    recorded: Decision
    replayed: Decision
    revision: int
    current: Decision | None
    current_revision: int

    @property
    def identical(self) -> bool:
        return same_outcome(self.recorded, self.replayed)


def decision_replay(*, record: DecisionRecord) -> Replay:
    """Evaluate a logged decision again: under the revision it was made under, and under today's."""
    try:
        then = engines.for_revision(record.revision)
    except ConfigRevision.DoesNotExist as exc:
        raise NotFound(f"Revision {record.revision} of the configuration no longer exists.") from exc
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc
    point = then.point(record.point)
    if point is None:  # cannot happen for a revision the decision was made under; guard all the same
        raise NotFound(f"Revision {record.revision} has no point '{record.point}'.")
    replayed = _reevaluate(point, record, exact=True)
    current_config = engines.current()
    current_point = current_config.point(record.point)
    current = _reevaluate(current_point, record, exact=False) if current_point is not None else None
    return Replay(
        recorded=record_decision(record),
        replayed=replayed,
        revision=record.revision,
        current=current,
        current_revision=current_config.revision,
    )


_PLACEHOLDER = re.compile(r"\[[a-z][a-z0-9_]*\]")


def _reevaluate(point: CompiledPoint, record: DecisionRecord, *, exact: bool) -> Decision:
    """Decide a logged request again. The logged input is masked when personal data was found in it:
    under the revision it was decided under (``exact``), the lists that hit then are known and are used
    instead of a scan, so the replay is identical; under another revision the masked text is scanned with
    the placeholders blanked out (a term like "phone" must not match "[phone]"), plus the recorded hits
    that the lists still hold."""
    candidate = record_candidate(record)
    text = record.input
    known_lists = None
    if record.masked:
        if exact:
            known_lists = list(record.keyword_hits)
        else:
            text = _PLACEHOLDER.sub("\ufffc", text)
    decision = evaluate(
        point,
        text=text,
        candidate=candidate,
        facts=record.facts,
        now=record.created_at,
        session_state=record.session_state or None,
        known_hits=record.keyword_hits if record.masked else None,
        known_lists=known_lists,
    )
    if record.candidate_invalid:
        decision = _invalid_output_decision(point, decision, "recorded as invalid")
    return decision


def decision_get_for_agent(*, agent: AgentRuntime, decision_id: str) -> DecisionRecord:
    try:
        pk = uuid.UUID(decision_id)
    except ValueError as exc:
        raise NotFound("No decision with that id was made by this agent.") from exc
    record = DecisionRecord.objects.filter(pk=pk, agent=agent).first()
    if record is None:
        raise NotFound("No decision with that id was made by this agent.")
    return record

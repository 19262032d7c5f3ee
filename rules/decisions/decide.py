"""Deciding a request and logging it: the part of every agent turn that needs only the configuration.

``agents.sessions.decide.decision_make`` orchestrates a whole decide: the agent's scope, the
session's lock and state, the anomalies and the move. Here: the compiled point, the evaluation (the
request checked and evaluated by ``rules.decisions.compute``, the step the simulator takes too), and the
log row (or the "ask your LLM" counter) written in the caller's transaction with the statements of
``rules.decisions.statements``, so a decision that is answered is always in the log.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from decision_service.db import prepared_cursor
from rules.config.runtime import engines
from rules.decisions import statements
from rules.decisions.compute import DecideRequest, Prepared, decision_compute

# Re-exported: the request's checks and the invalid-output override are part of this service's surface
# (the agents app, replay and regressions call them); they live with decide's pure step.
from rules.decisions.compute import decision_for_invalid_output as decision_for_invalid_output
from rules.decisions.compute import decision_prepare as decision_prepare
from rules.decisions.compute import facts_check as facts_check
from rules.decisions.session_data import session_read_document
from rules.engine import Candidate, CompiledPoint, Decision
from rules.engine.compiler import CompileError
from rules.engine.model import MatchedRule
from rules.engine.request import SessionView
from rules.errors import EngineUnavailable, UnknownPoint
from rules.models import DecisionIdempotencyKey, DecisionRecord

# Anomalies a decision can reveal about the model; the agents app records them against the session.
CANDIDATE_NOT_AN_OUTCOME = "candidate_not_an_outcome"
INVALID_CANDIDATE_OUTPUT = "invalid_candidate_output"


@dataclass(frozen=True)
class DecideResult:
    """``record`` is the logged decision; it is None when the point asks for a candidate first."""

    decision: Decision
    revision: int
    evaluated_us: int
    record: DecisionRecord | None
    replayed: bool = False
    session_move: dict[str, Any] | None = None
    # Hints for the agent's next prompt when the decision named a session (filled in by the agents app).
    feedback: list[str] | None = None
    # The session object (agents.sessions.presenters) when the decision named a session, and what the
    # model's prompt needs when the answer asks for a candidate: filled in by the agents app.
    session: dict[str, Any] | None = None
    prompt: dict[str, Any] | None = None


@dataclass(frozen=True)
class AnomalyNote:
    """Something the model did wrong, seen while deciding: ``raw`` is the (masked) model output."""

    code: str
    detail: str
    raw: str = ""


@dataclass(frozen=True)
class Evaluated:
    """What ``decision_evaluate`` did: the decision, and its log row unless a candidate is needed first."""

    decision: Decision
    evaluated_us: int
    record: DecisionRecord | None
    anomalies: tuple[AnomalyNote, ...] = ()


def point_current(*, point_key: str) -> tuple[CompiledPoint, int]:
    """The compiled point of the current revision, with the revision's number."""
    try:
        config = engines.current()
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc
    point = config.point(point_key)
    if point is None:
        raise UnknownPoint(f"There is no decision point '{point_key}'.")
    return point, config.revision


def _count_candidate_request(agent_id: int, agent_name: str, point: str, day: dt.date) -> None:
    """One more "ask your LLM" answer for (point, agent, day): one upsert, no row lock held in Python."""
    params: dict[str, Any] = {
        "point": point,
        "agent_id": agent_id,
        "agent_name": agent_name,
        "day": connection.ops.adapt_datefield_value(day),
    }
    with connection.cursor() as cursor:
        cursor.execute(statements.candidate_count_upsert(), params)


def decision_evaluate(
    *,
    agent_id: int,
    agent_name: str,
    point: CompiledPoint,
    revision: int,
    request: DecideRequest,
    prepared: Prepared,
    session_state: str | None,
    now: dt.datetime,
    idempotency_key: str = "",
    digest: str = "",
    save: bool = True,
    count: bool = True,
    session: SessionView | None = None,
) -> Evaluated:
    """Evaluate the request and log the decision, in the caller's transaction.

    A point that needs a candidate first logs nothing (its "ask your LLM" counter goes up). Anything
    the model did wrong is returned as ``anomalies`` for the caller to record against the session.
    With ``save=False`` the log row is returned unsaved, for a caller that inserts it itself (outside a
    transaction when it is the only write); with ``count=False`` as well, nothing is written at all, for
    a caller that evaluates in a state it has only guessed and will evaluate again if the guess was wrong.
    ``session`` is what the point's rules read of the session beyond its state
    (``rules.decisions.session_data.session_view``); the row records it.
    """
    computed = decision_compute(
        point=point, request=request, prepared=prepared, session_state=session_state, now=now, session=session
    )
    decision, evaluated_us = computed.decision, computed.evaluated_us
    if decision.needs_candidate:
        if count:
            _count_candidate_request(agent_id, agent_name, point.spec.key, now.date())
        return Evaluated(decision=decision, evaluated_us=evaluated_us, record=None)
    record = decision_record_build(
        agent_id, agent_name, request, point, decision, revision, evaluated_us, now, idempotency_key, digest
    )
    record.session_state = session_state or ""
    if session is not None:
        record.session_read = session_read_document(point, session)
    if save:
        decision_record_insert(record=record)
    anomalies = []
    if prepared.parse_problem is not None:
        anomalies.append(AnomalyNote(INVALID_CANDIDATE_OUTPUT, prepared.parse_problem, record.candidate_raw))
    candidate = prepared.candidate
    if decision.candidate_outside_outcomes and candidate is not None:
        detail = f"candidate '{candidate.decision}' is not an outcome of {point.spec.key}"
        anomalies.append(AnomalyNote(CANDIDATE_NOT_AN_OUTCOME, detail))
    return Evaluated(decision=decision, evaluated_us=evaluated_us, record=record, anomalies=tuple(anomalies))


def decision_record_insert(*, record: DecisionRecord) -> None:
    """Insert a log row; with an Idempotency-Key, its key row too, both or neither.

    Requests without a key: one INSERT (in autocommit when the caller holds no transaction), prepared on
    PostgreSQL (``decision_service.db``). A key costs one more INSERT: the log is partitioned on
    PostgreSQL, so (agent, key) cannot be a unique index on it and lives in ``DecisionIdempotencyKey``. On
    PostgreSQL both inserts are one statement (the key's in a writable CTE), so a keyed decide without a
    session is still one round trip in autocommit; SQLite has no writable CTEs and runs the two in a
    transaction. Of two requests racing with one key, the second waits on the key's unique index until
    the first commits, then fails with IntegrityError having written nothing, and the caller answers it
    with the first one's decision.
    """
    if connection.vendor != "postgresql":
        if not record.idempotency_key or record.agent_id is None:  # a key is always an agent's
            record.save(force_insert=True)
            return
        with transaction.atomic():
            DecisionIdempotencyKey.objects.create(
                agent_id=record.agent_id,
                key=record.idempotency_key,
                decision_id=record.pk,
                created_at=record.created_at,
            )
            record.save(force_insert=True)
        return
    log = statements.log_insert()
    statement, params = log.insert, log.params(record)
    if record.idempotency_key and record.agent_id is not None:
        statement, params = log.keyed_insert, {**params, **log.key_params(record)}
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
    log.saved(record)


def decision_session_move_set(*, record: DecisionRecord, move: dict[str, Any]) -> None:
    """Record on the log row how the decision moved its session (apply=true), in the same transaction."""
    record.session_move = move
    record.save(update_fields=["session_move"])


def matched_rule_document(m: MatchedRule) -> dict[str, Any]:
    """How a matched rule is stored in the log (and read back by ``decision_from_record``)."""
    return {"key": m.key, "priority": m.priority, "category": m.category, "outcome": m.outcome, "shadow": m.shadow}


def decision_record_build(
    agent_id: int,
    agent_name: str,
    request: DecideRequest,
    point: CompiledPoint,
    decision: Decision,
    revision: int,
    evaluated_us: int,
    now: dt.datetime,
    idempotency_key: str,
    digest: str,
) -> DecisionRecord:
    masker = point.masker
    masked_input = masker.mask(request.input)
    counts = dict(masked_input.counts)
    masked_facts = masker.mask_facts(request.facts)
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
        agent_id=agent_id,
        agent_name=agent_name,
        session_id=request.session_id,
        input=masked_input.text,
        facts=masked_facts.facts,
        masked_facts=masked_facts.record,
        candidate_decision=candidate.decision if candidate else "",
        candidate_confidence=candidate.confidence if candidate else None,
        candidate_reason=masked(candidate.reason) if candidate else "",
        # Off (the default): the parsed candidate only; whether the output was invalid is kept either way.
        candidate_raw=masked(request.candidate_raw or "") if point.store_raw_output else "",
        candidate_invalid=request.candidate_raw is not None and candidate is None,
        decision=decision.decision or "",
        ruled_by=decision.ruled_by or "",
        rule_key=rule.key if rule else "",
        rule_priority=rule.priority if rule else None,
        rule_category=rule.category if rule else "",
        matched_rules=[matched_rule_document(m) for m in decision.matched_rules],
        keyword_hits={k: list(v) for k, v in decision.keyword_hits.items()},
        overridden=decision.overridden,
        reason=masked(masker.mask_fact_values(decision.reason, request.facts, masked_facts)),
        revision=revision,
        engine=point.backend,
        evaluated_us=evaluated_us,
        tokens_prompt=request.tokens_prompt,
        tokens_completion=request.tokens_completion,
        llm_model=request.llm_model,
        llm_prompt_version=request.llm_prompt_version,
        llm_latency_ms=request.llm_latency_ms,
        idempotency_key=idempotency_key,
        request_digest=digest,
        masked=counts,
    )


def logged_candidate(decision: str, confidence: float | None, reason: str) -> Candidate | None:
    """The candidate of a logged request from its three columns (none unless an outcome and a confidence)."""
    if not decision or confidence is None:
        return None
    return Candidate(decision, confidence, reason)


def decision_record_candidate(record: Any) -> Candidate | None:
    """The candidate a logged request carried (a ``DecisionRecord`` or a row with its candidate fields)."""
    return logged_candidate(record.candidate_decision, record.candidate_confidence, record.candidate_reason)


def decision_from_record(record: DecisionRecord) -> Decision:
    """The logged decision, read back as an engine ``Decision``."""
    matched = tuple(MatchedRule(**m) for m in record.matched_rules)
    rule = next((m for m in matched if m.key == record.rule_key and not m.shadow), None)
    return Decision(
        point=record.point,
        decision=record.decision,
        ruled_by=record.ruled_by,  # type: ignore[arg-type]
        rule=rule,
        matched_rules=matched,
        candidate=decision_record_candidate(record),
        overridden=record.overridden,
        needs_candidate=False,
        reason=record.reason,
        keyword_hits={k: tuple(v) for k, v in record.keyword_hits.items()},
    )


def decision_result_from_record(record: DecisionRecord, *, replayed: bool = True) -> DecideResult:
    """A logged decision as the answer to its request: what a retry with the same Idempotency-Key gets."""
    return DecideResult(
        decision=decision_from_record(record),
        revision=record.revision,
        evaluated_us=record.evaluated_us,
        record=record,
        replayed=replayed,
        session_move=record.session_move,
    )

"""Deciding a request and logging it: the part of every agent turn that needs only the configuration.

``agents.sessions.decide.decision_make`` orchestrates a whole decide: the agent's scope, the
session's lock and state, the anomalies and the move. Here: the compiled point, the request's facts and
candidate checked against it, the evaluation, and the log row (or the "ask your LLM" counter) written
in the caller's transaction, so a decision that is answered is always in the log.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import NOT_PROVIDED

from decision_service.db import built_per_database, prepared_cursor
from rules.engine import Candidate, CandidateParseError, CompiledPoint, Decision, evaluate, parse_candidate
from rules.engine.compiler import CompileError
from rules.engine.model import DEFAULT, HARD_RULE, MatchedRule
from rules.errors import EngineUnavailable, InvalidRequest, UnknownPoint
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord
from rules.runtime import engines

# Anomalies a decision can reveal about the model; the agents app records them against the session.
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
    # Hints for the agent's next prompt when the decision named a session (filled in by the agents app).
    feedback: list[str] | None = None


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


@dataclass(frozen=True)
class Prepared:
    """The request checked against its point: the candidate to decide with, and why raw output held none."""

    candidate: Candidate | None
    parse_problem: str | None
    facts: Mapping[str, Any]


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


def _count_candidate_request(agent_id: int, agent_name: str, point: str, day: dt.date) -> None:
    """One more "ask your LLM" answer for (point, agent, day): one upsert, no row lock held in Python.

    ``INSERT … ON CONFLICT DO UPDATE SET count = count + 1`` (PostgreSQL and SQLite alike) increments in
    the database, so concurrent requests never read-modify-write the row and never lose a count.
    """
    table = CandidateRequestCount._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{table}" (point, agent_id, agent_name, day, count) VALUES (%s, %s, %s, %s, 1) '  # noqa: S608
            "ON CONFLICT (point, agent_id, day) DO UPDATE SET count = "
            f'"{table}".count + 1',
            [point, agent_id, agent_name, connection.ops.adapt_datefield_value(day)],
        )


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
) -> Evaluated:
    """Evaluate the request and log the decision, in the caller's transaction.

    A point that needs a candidate first logs nothing (its "ask your LLM" counter goes up). Anything
    the model did wrong is returned as ``anomalies`` for the caller to record against the session.
    With ``save=False`` the log row is returned unsaved, for a caller that inserts it itself (outside a
    transaction when it is the only write); with ``count=False`` as well, nothing is written at all, for
    a caller that evaluates in a state it has only guessed and will evaluate again if the guess was wrong.
    """
    started = time.perf_counter_ns()
    decision = evaluate(
        point,
        text=request.input,
        candidate=prepared.candidate,
        facts=prepared.facts,
        now=now,
        session_state=session_state,
    )
    if prepared.parse_problem is not None:
        decision = decision_for_invalid_output(point, decision, prepared.parse_problem)
    evaluated_us = (time.perf_counter_ns() - started) // 1000
    if decision.needs_candidate:
        if count:
            _count_candidate_request(agent_id, agent_name, point.spec.key, now.date())
        return Evaluated(decision=decision, evaluated_us=evaluated_us, record=None)
    record = decision_record_build(
        agent_id, agent_name, request, point, decision, revision, evaluated_us, now, idempotency_key, digest
    )
    record.session_state = session_state or ""
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


@dataclass(frozen=True)
class LogInsert:
    """The decision log's INSERT, written once from the model's own metadata instead of compiled by the ORM
    on every decide (the compile cost more Python than the rest of the insert: bench/RESULTS.md).

    ``insert`` is the statement, ``keyed_insert`` the same after the Idempotency-Key row's INSERT (a
    writable CTE: its four parameters come first). ``typed_values`` is the ``VALUES`` list with each
    parameter cast to its column's type, for an ``INSERT … SELECT`` (where nothing else types a
    parameter): cast without a length (``varchar``, not ``varchar(64)``), so that a value too long is
    refused by the column as in a plain INSERT instead of cut short by the cast.
    """

    table: str
    columns: str
    typed_values: str
    insert: str
    keyed_insert: str
    fields: tuple[Any, ...]

    def params(self, record: DecisionRecord) -> list[Any]:
        """The row's values as the ORM would send them (``pre_save``, then the field's database form)."""
        return [f.get_db_prep_save(f.pre_save(record, True), connection) for f in self.fields]

    @staticmethod
    def saved(record: DecisionRecord) -> None:
        """Mark ``record`` as in the database, as ``save()`` does after its INSERT."""
        record._state.adding = False
        record._state.db = connection.alias


def _log_insert_build() -> LogInsert:
    quote = connection.ops.quote_name
    fields = tuple(DecisionRecord._meta.concrete_fields)

    for f in fields:
        # The ORM leaves such columns out of an INSERT for the database to fill: this statement names all.
        if f.generated or f.db_default is not NOT_PROVIDED:
            raise ImproperlyConfigured(f"The log INSERT cannot write {f.name}: generated or a database default.")

    def cast(f: Any) -> str:
        # Without the length: an explicit cast to varchar(n) cuts a value short where the column refuses it.
        return "%s::" + re.sub(r"\(\d+\)$", "", f.db_type(connection))

    table, columns = quote(DecisionRecord._meta.db_table), ", ".join(quote(f.column) for f in fields)
    # Built from table and column names of the models' metadata: every value is a parameter.
    insert = f"INSERT INTO {table} ({columns}) VALUES ({', '.join('%s' for _ in fields)})"  # noqa: S608
    keys = quote(DecisionIdempotencyKey._meta.db_table)
    return LogInsert(
        table=table,
        columns=columns,
        typed_values=", ".join(cast(f) for f in fields),
        insert=insert,
        keyed_insert=f"WITH idempotency AS (INSERT INTO {keys} (agent_id, key, decision_id, created_at)"  # noqa: S608
        f" VALUES (%s, %s, %s, %s)) {insert}",
        fields=fields,
    )


# The log INSERT for the current database.
decision_log_insert_statement = built_per_database(_log_insert_build)


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
    log = decision_log_insert_statement()
    statement, params = log.insert, log.params(record)
    if record.idempotency_key and record.agent_id is not None:
        key = [record.agent_id, record.idempotency_key, record.pk, record.created_at]
        statement, params = log.keyed_insert, key + params
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
    log.saved(record)


def decision_session_move_set(*, record: DecisionRecord, move: dict[str, Any]) -> None:
    """Record on the log row how the decision moved its session (apply=true), in the same transaction."""
    record.session_move = move
    record.save(update_fields=["session_move"])


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
        candidate_raw=masked(request.candidate_raw or ""),
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

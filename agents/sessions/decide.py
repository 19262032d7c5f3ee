"""A whole decide, as an agent runtime asks for it on every turn: scope, session, decision, log, move.

The configuration's part (the compiled point, the evaluation — ``rules.decisions.compute`` —, the log
row) is ``rules.decisions.decide``; this module adds what only the agents app knows: the agent's scope,
the session's lock and state, the anomalies recorded against the session, and the move that
``apply=true`` makes. Decision, log row, anomalies and move commit together or not at all.

``decision_make`` takes one of four paths, each a function here:

- ``_path_without_session`` — no session, no ``apply``: the log row is the only write (one INSERT).
- ``_path_guessed`` — a session it does not move, whose state this process has seen
  (``agents.sessions.reads``): the rules decide in that state and one statement logs the row only if the
  session is still in it. Wrong guess: decided again in the state that statement read.
- ``_path_reading_session`` — a session it does not move: read as last committed, then the INSERT.
- ``_path_under_lock`` — ``apply``, or either path above when the model did something wrong (anomalies
  are counted on the session and may hand it off): under the session's lock, in a transaction. The two
  unlocked paths say so by returning ``UNDER_LOCK`` (they wrote nothing), never ``None``.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.errors import MachineMismatch, SessionClosed, StateMismatch, UnknownSession
from agents.runtimes.models import AgentRuntime
from agents.runtimes.selectors import agent_principal
from agents.sessions.codes import DECISION_MOVE_NOT_ALLOWED, RULE_MOVE_NOT_ALLOWED
from agents.sessions.feedback import FeedbackBasis, session_feedback
from agents.sessions.fields import fields_missing_in
from agents.sessions.models import Session
from agents.sessions.presenters import session_state
from agents.sessions.reads import (
    Recent,
    session_lock_with_recent,
    session_log_if_state,
    session_read_with_recent,
    session_state_seen,
)
from agents.sessions.selectors import session_get_for_agent
from agents.sessions.services import (
    _extra,
    anomaly_record,
    session_allowed_targets,
    session_handed_off,
    session_move,
)
from agents.sessions.spans import decide_traced
from decision_service import metrics, tracing
from decision_service.errors import InvalidRequest
from decision_service.principals import AgentPrincipal
from rules.config.scope import point_allowed_check
from rules.decisions.compute import DecideRequest, Prepared, SessionSeen, decision_prepare, session_guess_allowed
from rules.decisions.decide import (
    DecideResult,
    Evaluated,
    decision_evaluate,
    decision_record_insert,
    decision_result_from_record,
    decision_session_move_set,
    point_current,
)
from rules.decisions.selectors import decision_get_by_idempotency_key
from rules.decisions.session_data import session_view
from rules.engine import CompiledPoint
from rules.models import DecisionRecord, RuledBy


def decision_make(
    *,
    agent: AgentPrincipal | AgentRuntime,
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
    with tracing.span("arbiter.decide") as span:  # off: < 1 µs (bench/RESULTS.md, "Tracing")
        result = _decide(agent, request, idempotency_key, now, apply)
        if span is not None:
            decide_traced(span, request, result)
        return result


def _decide(
    agent: AgentPrincipal | AgentRuntime,
    request: DecideRequest,
    idempotency_key: str,
    now: dt.datetime | None,
    apply: bool,
) -> DecideResult:
    principal = agent if isinstance(agent, AgentPrincipal) else agent_principal(agent)
    digest = request.digest(apply=apply)
    if idempotency_key:
        existing = decision_get_by_idempotency_key(agent_id=principal.pk, key=idempotency_key, digest=digest)
        if existing is not None:
            return _replayed(principal, request, existing)
    point, revision = point_current(point_key=request.point)
    point_allowed_check(agent=principal, point_key=request.point)
    prepared = decision_prepare(point=point, request=request)
    turn = _Turn(principal, request, point, revision, prepared, now or timezone.now(), idempotency_key, digest)
    try:
        if not request.session_id and not apply:
            return _counted(_path_without_session(turn))
        if not apply:
            unlocked = _path_reading_session(turn)
            if unlocked is not UNDER_LOCK:
                return _counted(unlocked)
        decided = _path_under_lock(turn, apply)
    except IntegrityError:
        # Two retries with one key raced: the other one logged it first.
        if idempotency_key:
            existing = decision_get_by_idempotency_key(agent_id=principal.pk, key=idempotency_key, digest=digest)
            if existing is not None:
                return _replayed(principal, request, existing)
        raise
    return _counted(decided)


def _replayed(principal: AgentPrincipal, request: DecideRequest, record: DecisionRecord) -> DecideResult:
    """A retry with the same Idempotency-Key: the decision as logged (and the move it made), the session
    as it is now."""
    result = decision_result_from_record(record)
    if not request.session_id:
        return result
    session = session_get_for_agent(agent=principal, session_id=request.session_id)
    shown: dict[str, Any] = dict(session_state(session))
    if record.session_move:  # a replayed apply: where the session was when it moved
        shown["from"] = record.session_move["from"]
    return replace(result, feedback=shown["feedback"], session=shown)


def _prompt(point: CompiledPoint, feedback: list[str]) -> dict[str, Any]:
    """What the model's prompt needs when the answer asks for a candidate: all from the compiled point."""
    spec = point.spec
    floor = spec.confidence_floor()
    return {
        "outcomes": sorted(spec.outcomes),
        "candidate_whitelist": sorted(spec.whitelist),
        "min_confidence": floor[1] if floor else None,
        "feedback": list(feedback),
    }


class _UnderLock(enum.Enum):
    """What an unlocked path answers when the decide must be made again under the session's lock."""

    UNDER_LOCK = "under_lock"


UNDER_LOCK = _UnderLock.UNDER_LOCK


def _path_under_lock(turn: _Turn, apply: bool) -> DecideResult:
    """Lock the session (when there is one), refuse what ``apply`` may not do, decide, log and move: one
    transaction. A session a person has is refused after the attempt is committed as an anomaly."""
    principal, request, point = turn.principal, turn.request, turn.point
    with transaction.atomic():
        session, recent = _session_for(principal, request.session_id, point, apply)
        refused: Exception | None = None
        if apply and session is not None and request.expected_state and session.state != request.expected_state:
            refused = _stale(turn, session, recent)
        elif apply and session is not None:
            # A person has it: nothing is decided or logged, and the attempt is kept as an anomaly (committed).
            refused = session_handed_off(
                session, principal, f"a decision of {point.spec.key} with apply", point=point.spec.key
            )
        if refused is None:
            return _decide_locked(turn, session, recent, apply)
    raise refused


def _stale(turn: _Turn, session: Session, recent: Recent) -> StateMismatch:
    """``apply`` with an ``expected_state`` the session has left: decided in the state it is in and logged
    (an answered decision is always in the log; its id is in the refusal), its anomalies recorded, but the
    session is not moved. Not kept under the Idempotency-Key: a retry with the key is decided again."""
    evaluated = replace(turn, idempotency_key="").evaluate(session.state, save=True, session=session, recent=recent)
    extra: dict[str, Any] = {}
    if evaluated.record is not None:
        _record_anomalies(evaluated, session, turn.principal, turn.request, turn.point, evaluated.record)
        extra["decision_id"] = str(evaluated.record.pk)
    return StateMismatch(
        f"The session is in '{session.state}' (seq {session.seq}), not '{turn.request.expected_state}': the "
        "decision was logged but did not move it; decide again from its session object.",
        extra=_extra(session, **extra),
    )


def _decide_locked(turn: _Turn, session: Session | None, recent: Recent, apply: bool) -> DecideResult:
    """Decide under the session's lock (held by the caller's transaction), log, and move with ``apply``."""
    principal, request, point = turn.principal, turn.request, turn.point
    evaluated = turn.evaluate(session.state if session else None, save=True, session=session, recent=recent)
    record = evaluated.record
    if record is None:
        return _unlogged(
            turn,
            evaluated,
            feedback=session_feedback(session) if session else [],
            session=session,
            start=session.state if apply and session else None,
        )
    start = _stay(session) if session is not None else None
    _record_anomalies(evaluated, session, principal, request, point, record)
    if apply and session is not None and start is not None:
        # From where the session was when the request came: an anomaly above may have handed it off.
        move = {**_apply(session, point, record, principal), "from": start["from"]}
        decision_session_move_set(record=record, move=move)
    # Read under the session's lock, after this decision's own anomalies: what the answer shows.
    feedback = session_feedback(session) if session else []
    # Answer from the record, as a retry with the same Idempotency-Key will be: masked where it was masked.
    result = replace(decision_result_from_record(record, replayed=False), feedback=feedback)
    if session is None:
        return result
    return replace(result, session=_shown(session, feedback, start["from"] if apply and start else None))


def _shown(session: Session, feedback: list[str], start: str | None) -> dict[str, Any]:
    """The session object of a decide's answer; with ``apply``, with the state it was moved ``from``."""
    shown: dict[str, Any] = dict(session_state(session, feedback=feedback))
    if start is not None:
        shown["from"] = start
    return shown


def _counted(result: DecideResult) -> DecideResult:
    """Count a new decision (not a replay) in the metrics once its transaction commits: at once in
    autocommit, never for a decision rolled back."""
    decision = result.decision
    if decision.needs_candidate:
        count = partial(metrics.candidate_needed, point=decision.point, evaluated_us=result.evaluated_us)
    else:
        count = partial(
            metrics.decision_made,
            point=decision.point,
            ruled_by=decision.ruled_by or "",
            decision=decision.decision or "",
            evaluated_us=result.evaluated_us,
        )
    transaction.on_commit(count)
    return result


@dataclass(frozen=True)
class _Turn:
    """One decide's inputs, settled before any session is read; evaluated the same way on every path."""

    principal: AgentPrincipal
    request: DecideRequest
    point: CompiledPoint
    revision: int
    prepared: Prepared
    now: dt.datetime
    idempotency_key: str
    digest: str

    def evaluate(
        self,
        session_state: str | None,
        *,
        save: bool,
        count: bool = True,
        session: Session | None = None,
        recent: Recent = (),
    ) -> Evaluated:
        """Evaluate in ``session_state``; with the ``session`` read (and the keyword lists of its ``recent``
        decisions), its rules see what they read of it (``rules.decisions.session_data``)."""
        return decision_evaluate(
            agent_id=self.principal.pk,
            agent_name=self.principal.name,
            point=self.point,
            revision=self.revision,
            request=self.request,
            prepared=self.prepared,
            session_state=session_state,
            now=self.now,
            idempotency_key=self.idempotency_key,
            digest=self.digest,
            save=save,
            count=count,
            session=session_view(self.point, session.field_values, recent) if session is not None else None,
        )


def _path_without_session(turn: _Turn) -> DecideResult:
    """No session: the log row is the only write, one INSERT in autocommit (no BEGIN, no COMMIT, no lock);
    with an Idempotency-Key, the key's row and the log row in one transaction.

    Anomalies (raw output without a candidate, a candidate that is no outcome) are written with the row
    in one transaction; a point that asks for a candidate first only counts (one upsert).
    """
    evaluated = turn.evaluate(None, save=False)
    record = evaluated.record
    if record is None:
        return _unlogged(turn, evaluated, feedback=[], session=None)
    if evaluated.anomalies:
        with transaction.atomic():
            decision_record_insert(record=record)
            _record_anomalies(evaluated, None, turn.principal, turn.request, turn.point, record)
    else:
        decision_record_insert(record=record)
    return decision_result_from_record(record, replayed=False)


def _path_reading_session(turn: _Turn) -> DecideResult | _UnderLock:
    """A decide with a session that it does not move: rules see the session as last committed, without a
    lock or a transaction, and the log row records that state.

    When this process has seen the session before (PostgreSQL) and the point's rules read nothing of a
    session but its state, ``_path_guessed``: one round trip. Otherwise, or when the session has moved
    meanwhile, the session is read (with its feedback basis) and the row inserted: two.

    ``UNDER_LOCK`` when the model did something wrong: anomalies are counted on the session and may hand
    it off, so the caller decides again under the session's lock (the unsaved row is dropped; nothing was
    written). A point that asks for a candidate first only counts, as on every path.
    """
    agent_id, key = turn.principal.pk, turn.request.session_id
    # A keyed decide writes its key's row with the log row (decision_record_insert), which the folded
    # statement does not carry: it reads first, as it already looked its key up before deciding.
    seen = None if turn.idempotency_key else session_state_seen(agent_id=agent_id, key=key)
    if seen is not None and session_guess_allowed(turn.point):
        guessed = _path_guessed(turn, SessionSeen(state=seen))
        if guessed is not None:
            return guessed
    metrics.decide_session_read(read="read")
    # A point whose rules read the session's latest decisions gets their keyword lists in the same statement.
    session, basis, recent = session_read_with_recent(agent_id=agent_id, key=key, history=turn.point.history_depth)
    return _decide_in(turn, session, basis, recent)


def _path_guessed(turn: _Turn, seen: SessionSeen) -> DecideResult | _UnderLock | None:
    """Decide in the state the session was last seen in (``seen``: all the rules may read of it), and
    log only if it is still in it (one statement); wrong, decide again in the state that statement read.
    ``None``: the guess could not be used (the model did something wrong, or the point asks for a
    candidate first) — read instead."""
    agent_id, key, state = turn.principal.pk, turn.request.session_id, seen.state
    # Nothing written on a guess, not even the "ask your LLM" counter: it may be decided again.
    evaluated = turn.evaluate(state, save=False, count=False)
    record = evaluated.record
    if record is None or evaluated.anomalies:
        return None
    found = session_log_if_state(agent_id=agent_id, key=key, state=state, record=record)
    # How often guesses hold in real traffic decides how much this path saves: counted.
    metrics.decide_session_read(read="guessed" if found.logged else "guessed_wrong")
    if found.logged and found.session is not None:
        return _answered(record, found.basis, found.session)
    return _decide_in(turn, found.session, found.basis)


def _unlogged(
    turn: _Turn, evaluated: Evaluated, *, feedback: list[str], session: Session | None, start: str | None = None
) -> DecideResult:
    """The answer to a decide that logged no row: the point asks for a candidate first (only counted),
    with what the model's prompt needs. ``start``: with ``apply``, where the session stayed."""
    return DecideResult(
        decision=evaluated.decision,
        revision=turn.revision,
        evaluated_us=evaluated.evaluated_us,
        record=None,
        session_move=_stay(session) if session is not None and start is not None else None,
        feedback=feedback if session is not None else None,
        session=_shown(session, feedback, start) if session is not None else None,
        prompt=_prompt(turn.point, feedback),
    )


def _decide_in(
    turn: _Turn, session: Session | None, basis: FeedbackBasis, recent: Recent = ()
) -> DecideResult | _UnderLock:
    """Decide in ``session``'s state, read as last committed with ``basis`` (and ``recent``, the keyword
    lists of its latest decisions, for a point whose rules read them), and log the row (see above).
    A session this agent does not have is refused before anything is written."""
    if session is None:
        raise UnknownSession(f"This agent has no session '{turn.request.session_id}'.")
    evaluated = turn.evaluate(session.state, save=False, session=session, recent=recent)
    record = evaluated.record
    if record is None:
        return _unlogged(turn, evaluated, feedback=basis.hints(), session=session)
    if evaluated.anomalies:
        return UNDER_LOCK
    decision_record_insert(record=record)
    return _answered(record, basis, session)


def _answered(record: DecisionRecord, basis: FeedbackBasis, session: Session) -> DecideResult:
    # As after this decision's row: an overruled candidate counts in the hints it gets back.
    feedback = basis.hints(then=record)
    result = decision_result_from_record(record, replayed=False)
    return replace(result, feedback=feedback, session=_shown(session, feedback, None))


def _record_anomalies(
    evaluated: Evaluated,
    session: Session | None,
    principal: AgentPrincipal,
    request: DecideRequest,
    point: CompiledPoint,
    record: DecisionRecord,
) -> None:
    for note in evaluated.anomalies:
        anomaly_record(
            session,
            agent=principal,
            session_id=request.session_id,
            point=point.spec.key,
            code=note.code,
            detail=note.detail,
            raw=note.raw,
            decision_id=record.pk,
        )


def _session_for(
    agent: AgentPrincipal, session_id: str, point: CompiledPoint, apply: bool
) -> tuple[Session | None, Recent]:
    """The session the decision is about, locked for the transaction, with the keyword lists of its latest
    decisions when the point's rules read them; refusals for apply=true."""
    if not session_id:
        if apply:
            raise InvalidRequest("apply needs a session_id.", errors={"session_id": ["Required with apply."]})
        return None, ()
    session, recent = session_lock_with_recent(agent_id=agent.pk, key=session_id, history=point.history_depth)
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'; create it first.")
    if not apply:
        return session, recent
    if session.state in session.machine.terminal_states:
        raise SessionClosed(f"The session ended in '{session.state}'.", extra=_extra(session))
    if point.spec.machine != session.machine.key:
        raise MachineMismatch(
            f"Decision point {point.spec.key} moves sessions of "
            f"'{point.spec.machine or 'no machine'}', not of '{session.machine.key}'."
        )
    return session, recent


def _stay(session: Session) -> dict[str, Any]:
    return {"from": session.state, "state": session.state, "seq": session.seq}


def _apply(session: Session, point: CompiledPoint, record: DecisionRecord, agent: AgentPrincipal) -> dict[str, Any]:
    """Move the session as the point maps the final decision; the fallback when the machine forbids it."""
    before = _stay(session)
    machine = session.machine
    if session.state == machine.handoff_state:
        return before  # this decision's own anomaly just handed it to a person (the policy): leave it there
    target = point.spec.state_map.get(record.decision)
    if target is None or target == session.state:
        return before
    if target in session_allowed_targets(session):
        if missing := fields_missing_in(machine, session.field_values, target):
            # Not the model's mistake nor the flow's: the fields come first. It stays, and says why.
            return {**before, "fields_missing": missing}
        move = session_move(
            session, to=target, kind="decision", actor=record.agent_name, reason=record.reason, decision_id=record.pk
        )
        return {"from": move.from_state, "state": move.state, "seq": move.seq}
    # The fallback is the point's safe place (seed 001: clarify). It is a move like any other: taken only
    # where the machine allows it. From a state that cannot go there (a person's queue, a refund under
    # review, or the very state the mapping was refused) the session stays where it is.
    fallback = point.spec.fallback_state
    can_fall_back = bool(fallback) and fallback != session.state and fallback in session_allowed_targets(session)
    detail = f"{record.decision} maps to '{target}', which {machine.key} does not allow from '{session.state}'" + (
        f"; fell back to '{fallback}'" if can_fall_back else f"; stayed in '{session.state}'"
    )
    # Only a candidate's outcome is the model's doing; a rule's or the default's is the configuration's,
    # recorded under its own code and never counted toward the model-failure policy.
    by_candidate = record.ruled_by == RuledBy.LLM_CANDIDATE
    handoff = anomaly_record(
        session,
        agent=agent,
        session_id=session.key,
        point=point.spec.key,
        code=DECISION_MOVE_NOT_ALLOWED if by_candidate else RULE_MOVE_NOT_ALLOWED,
        detail=detail,
        decision_id=record.pk,
        counted=by_candidate,
    )
    if handoff is not None:
        return {"from": before["from"], "state": handoff.state, "seq": handoff.seq}
    if not can_fall_back:
        return before
    move = session_move(
        session, to=fallback, kind="fallback", actor=record.agent_name, reason=detail, decision_id=record.pk
    )
    return {"from": move.from_state, "state": move.state, "seq": move.seq}

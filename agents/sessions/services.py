"""Sessions under explicit state machines. Nothing else changes a session's state.

Every move takes the session's lock (``SELECT … FOR UPDATE`` on PostgreSQL, the database write lock on
SQLite: see ``sessions_lock``) and then writes with a compare-and-set on ``seq``, so concurrent
callers from one ``expected_state`` get exactly one success: the others see the new state and are told
``state_mismatch``. ``seq`` is assigned here, one per move,
and each move is a ``Transition`` row unique on (session, seq): strictly increasing and gap-free.

Refusals that are a model's mistake (an illegal move, an action outside the whitelist) are recorded
as anomalies *and* refused: the anomaly is committed first, then the error is raised. When a session
collects its machine's ``max_anomalies``, it is handed to the machine's handoff state (model_failure).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from django.db import IntegrityError, NotSupportedError, OperationalError, connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from agents.errors import (
    ActionNotAllowed,
    IllegalTransition,
    NothingToResume,
    SessionBusy,
    SessionClosed,
    SessionExists,
    SessionHandedOff,
    StateMismatch,
    UnknownMachine,
    UnknownSession,
)
from agents.sessions.handoff import REASON_STARTED, SESSION_HANDED_OFF, handoff_reason_for, handoff_refusal
from agents.sessions.models import Anomaly, Session, Transition, TransitionKind
from decision_service import metrics
from decision_service.db import built_per_database, prepared_cursor
from decision_service.errors import DomainError, IdempotencyConflict, InvalidRequest
from rules.models import DecisionRecord, RuledBy, StateMachine
from rules.services.decide import decision_log_insert_statement


class AgentRef(Protocol):
    """The agent a call is made for: an ``AgentRuntime`` or the API's ``AgentPrincipal`` (its id and name)."""

    @property
    def pk(self) -> Any: ...

    @property
    def name(self) -> str: ...


SYSTEM_TIMEOUT = "system:timeout-sweep"
SYSTEM_MODEL_FAILURE = "system:model-failure-policy"
MODEL_FAILURE = "model_failure"
ILLEGAL_TRANSITION = "illegal_transition"
ACTION_NOT_ALLOWED = "action_not_allowed"
DECISION_MOVE_NOT_ALLOWED = "decision_move_not_allowed"
FEEDBACK_LIMIT = 50  # the latest anomalies and overruled decisions of a session that its hints count


@dataclass(frozen=True)
class Move:
    from_state: str
    state: str
    seq: int
    kind: str


def session_allowed_targets(session: Session) -> list[str]:
    if session.state in session.machine.terminal_states:
        return []
    return list(session.machine.transitions.get(session.state, []))


def session_allowed_actions(session: Session) -> list[str]:
    return list(session.machine.actions.get(session.state, []))


def _digest(body: Mapping[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))  # ASCII: always encodable
    return hashlib.sha256(canonical.encode()).hexdigest()


def session_create(
    *,
    agent: AgentRef,
    machine_key: str,
    session_id: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> Session:
    machine = StateMachine.objects.filter(key=machine_key).first()
    if machine is None:
        raise UnknownMachine(f"There is no state machine '{machine_key}'.")
    key = session_id or uuid.uuid4().hex
    session = Session(
        agent_id=agent.pk,
        key=key,
        machine=machine,
        state=machine.initial_state,
        context=dict(context or {}),
        state_entered_at=timezone.now(),
        handoff_reason=REASON_STARTED if machine.initial_state == machine.handoff_state else "",
    )
    try:
        with transaction.atomic():
            session.save(force_insert=True)
    except IntegrityError as exc:
        raise SessionExists(f"Session '{key}' already exists.") from exc
    return session


def sessions_lock(sessions: QuerySet[Session]) -> QuerySet[Session]:
    """``sessions`` to read under a lock held until the transaction ends (call inside ``atomic``).

    PostgreSQL: ``SELECT … FOR UPDATE`` on the rows. SQLite ignores FOR UPDATE and has only a database
    write lock; a transaction that reads first and writes later is refused at once ("database is
    locked", no waiting) when another writer got in between. Writing first (a no-op update) takes the
    write lock up front, waiting its busy timeout for the others as a row lock would.
    """
    if connection.vendor == "sqlite":
        _sqlite_write_lock(sessions)
    return sessions.select_for_update(of=("self",)).select_related("machine")


def _sqlite_write_lock(sessions: QuerySet[Session]) -> None:
    try:
        sessions.update(seq=F("seq"))
    except OperationalError as exc:
        if "locked" not in str(exc):
            raise
        # Other writers held the database for the whole busy timeout: the caller may retry.
        raise SessionBusy("The database is busy with other moves; retry shortly.") from exc


@dataclass(frozen=True)
class _SessionStatement:
    """A session and its machine read in one statement, with how to turn the row back into both."""

    sql: str
    session_fields: tuple[str, ...]
    machine_fields: tuple[str, ...]
    converters: dict[int, tuple[list[Any], Any]]


# Per thread, as Django's connections are: the converters are bound to the connection that built them.
_session_statements = threading.local()


def _session_statement(*, lock: bool, with_feedback: bool = False) -> _SessionStatement:
    """Built once per thread and database: the ORM compiled the same query on every request, which cost
    more than running it (bench/RESULTS.md, "Where the time goes")."""
    name = f"{connection.alias}:{'lock' if lock else 'read'}:{with_feedback}"
    found: _SessionStatement | None = getattr(_session_statements, name, None)
    if found is not None:
        return found
    quote = connection.ops.quote_name
    session_table, machine_table = Session._meta.db_table, StateMachine._meta.db_table
    session_fields = Session._meta.concrete_fields
    machine_fields = StateMachine._meta.concrete_fields
    column = {f.name: quote(f.column) for f in session_fields}
    selected = [f"s.{quote(f.column)}" for f in session_fields] + [f"m.{quote(f.column)}" for f in machine_fields]
    if with_feedback:  # PostgreSQL only: what FeedbackBasis holds, as two JSON arrays
        selected += [_FEEDBACK_ANOMALIES_PG, _FEEDBACK_OVERRULED_PG]
    # Only names from the models' own metadata go into the statement; the values are parameters.
    sql = (
        f"SELECT {', '.join(selected)} FROM {quote(session_table)} s"  # noqa: S608
        f" INNER JOIN {quote(machine_table)} m ON m.{quote(StateMachine._meta.pk.column)} = s.{column['machine']}"
        f" WHERE s.{column['agent']} = %s AND s.{column['key']} = %s"
    )
    if lock and connection.features.has_select_for_update_of:
        sql += " FOR UPDATE OF s"
    # The same converters the ORM applies to these columns (JSON decoding, aware datetimes on SQLite, …).
    compiler = Session.objects.all().query.get_compiler(connection=connection)
    cols = [f.get_col(session_table) for f in session_fields] + [f.get_col(machine_table) for f in machine_fields]
    statement = _SessionStatement(
        sql=sql,
        session_fields=tuple(f.attname for f in session_fields),
        machine_fields=tuple(f.attname for f in machine_fields),
        converters=compiler.get_converters(cols),
    )
    setattr(_session_statements, name, statement)
    return statement


def _session_fetch(
    statement: _SessionStatement, agent_id: Any, key: str, *, extra: tuple[Any, ...] = ()
) -> tuple[Session, tuple[Any, ...]] | None:
    """Run ``statement``: the session with its machine, and the values of any columns selected after them
    (``extra``: their parameters, which come before the session's)."""
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, (*extra, agent_id, key))
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for i, (converters, expression) in statement.converters.items():
        for convert in converters:
            values[i] = convert(values[i], expression, connection)
    split = len(statement.session_fields)
    end = split + len(statement.machine_fields)
    db = connection.alias
    session = Session.from_db(db, statement.session_fields, values[:split])
    machine = StateMachine.from_db(db, statement.machine_fields, values[split:end])
    Session.machine.field.set_cached_value(session, machine)
    return session, tuple(values[end:])


def session_lock(*, agent_id: Any, key: str) -> Session | None:
    """The agent's session ``key`` with its machine, locked until the transaction ends (call inside
    ``atomic``); ``None`` when the agent has no such session. The hot paths' form of ``sessions_lock``."""
    if connection.vendor == "sqlite":
        _sqlite_write_lock(Session.objects.filter(agent_id=agent_id, key=key))  # see sessions_lock
    fetched = _session_fetch(_session_statement(lock=True), agent_id, key)
    return fetched[0] if fetched else None


def session_read(*, agent_id: Any, key: str, limit: int = FEEDBACK_LIMIT) -> tuple[Session | None, FeedbackBasis]:
    """The agent's session ``key`` with its machine as last committed, without a lock, and what its
    feedback hints are counted from: for a caller that only reads the session (a decide that moves
    nothing and records nothing against it). One statement on PostgreSQL; SQLite reads the two apart.
    """
    if connection.vendor != "postgresql":
        fetched = _session_fetch(_session_statement(lock=False), agent_id, key)
        session = fetched[0] if fetched else None
        return session, (_feedback_basis(session, limit) if session else FeedbackBasis())
    statement = _session_statement(lock=False, with_feedback=True)
    fetched = _session_fetch(statement, agent_id, key, extra=(limit, limit))
    if fetched is None:
        # Gone (deleted behind this process's back): a guess of it must not outlive it.
        _seen_states.pop((connection.alias, agent_id, key), None)
        return None, FeedbackBasis()
    session, (anomalies, overruled) = fetched
    _seen(agent_id, key, session.state)
    return session, _basis_from_columns(anomalies, overruled, limit)


# -- a decide's read folded into its log insert (PostgreSQL) -----------------------------------------

# The state each session was last seen in by this process (a decide's read, a move it committed): a
# guess that lets the next decide of the session evaluate before reading it, never an answer
# (``session_log_if_state`` logs only if the session is still in that state, checked in the same
# statement). Bounded: past SEEN_STATES_MAX the session seen longest ago is forgotten; a session not in
# it costs a read first, as every decide with a session did before.
SEEN_STATES_MAX = 10_000
_seen_states: dict[tuple[str, Any, str], str] = {}


def session_state_seen(*, agent_id: Any, key: str) -> str | None:
    """The state this process last saw the session in; ``None`` when it saw none, and on SQLite always:
    only PostgreSQL can check a guess (``session_log_if_state`` needs a writable CTE)."""
    if connection.vendor != "postgresql":
        return None
    return _seen_states.get((connection.alias, agent_id, key))


def sessions_seen_forget() -> None:
    """Forget every state seen (the next decide of each session reads it first)."""
    _seen_states.clear()


def _seen(agent_id: Any, key: str, state: str) -> None:
    seen = (connection.alias, agent_id, key)
    _seen_states.pop(seen, None)  # to the end: the dict's order is the order last seen in
    _seen_states[seen] = state
    while len(_seen_states) > SEEN_STATES_MAX:
        # The session seen longest ago goes first. Each step is one dict operation (atomic under the GIL):
        # threads of one worker can only race to forget one more guess, never corrupt the dict.
        _seen_states.pop(next(iter(_seen_states), seen), None)


@dataclass(frozen=True)
class LoggedIfState:
    """What ``session_log_if_state`` found: whether it logged, and the session as committed when it ran."""

    logged: bool
    state: str | None  # None: the agent has no such session
    basis: FeedbackBasis


def _log_if_state_build() -> str:
    quote = connection.ops.quote_name
    column = {f.name: quote(f.column) for f in Session._meta.concrete_fields}
    log = decision_log_insert_statement()
    # One snapshot for all three parts: the INSERT is made only if the state read is the one the rules saw,
    # and the feedback columns are counted as before the row (a writable CTE's rows are not visible to
    # the rest of its statement), which is what FeedbackBasis.hints(then=…) expects.
    return (
        f"WITH current AS (SELECT s.{column['state']} AS state, {_FEEDBACK_ANOMALIES_PG}, {_FEEDBACK_OVERRULED_PG}"  # noqa: S608
        f" FROM {quote(Session._meta.db_table)} s WHERE s.{column['agent']} = %s AND s.{column['key']} = %s),"
        f" logged AS (INSERT INTO {log.table} ({log.columns}) SELECT {log.typed_values} FROM current"
        " WHERE current.state = %s::text RETURNING 1)"
        " SELECT current.*, (SELECT COUNT(*) FROM logged) FROM current"
    )


_log_if_state_sql = built_per_database(_log_if_state_build)


def session_log_if_state(
    *, agent_id: Any, key: str, state: str, record: DecisionRecord, limit: int = FEEDBACK_LIMIT
) -> LoggedIfState:
    """PostgreSQL only: in one statement, read the agent's session ``key`` as last committed with what its
    feedback hints are counted from (as ``session_read``), and insert ``record``'s log row only if the
    session is in ``state`` — the state ``record`` was decided in. A decide that guessed its session's
    state right makes one statement where it made two; one that guessed wrong learns the state and logs
    nothing, and decides again from what it learnt.
    """
    if connection.vendor != "postgresql":
        raise NotSupportedError("A guessed state is checked by a writable CTE: PostgreSQL only.")
    log = decision_log_insert_statement()
    with prepared_cursor() as cursor:
        cursor.execute(_log_if_state_sql(), (limit, limit, agent_id, key, *log.params(record), state))
        row = cursor.fetchone()
    if row is None:
        _seen_states.pop((connection.alias, agent_id, key), None)
        return LoggedIfState(logged=False, state=None, basis=FeedbackBasis())
    current, anomalies, overruled, logged = row
    _seen(agent_id, key, current)
    if logged:
        log.saved(record)
    return LoggedIfState(logged=bool(logged), state=current, basis=_basis_from_columns(anomalies, overruled, limit))


def _basis_from_columns(anomalies: Any, overruled: Any, limit: int) -> FeedbackBasis:
    """A FeedbackBasis from the two JSON columns of ``_FEEDBACK_ANOMALIES_PG`` and ``_FEEDBACK_OVERRULED_PG``."""
    return FeedbackBasis(
        anomalies=tuple((code, n) for code, n in _json(anomalies)),
        overruled=tuple((rule, decision) for rule, decision in _json(overruled)),
        limit=limit,
    )


def _json(value: Any) -> list[Any]:
    if value is None:
        return []  # an aggregate over no rows
    return json.loads(value) if isinstance(value, str | bytes) else list(value)


def _locked(agent: AgentRef, session_id: str) -> Session:
    session = session_lock(agent_id=agent.pk, key=session_id)
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session


def _mismatch(session: Session, expected: str) -> StateMismatch:
    return StateMismatch(
        f"The session is in '{session.state}' (seq {session.seq}), not '{expected}'; read it again and retry.",
        extra={"state": session.state, "seq": session.seq},
    )


def _closed(session: Session) -> SessionClosed:
    return SessionClosed(f"The session ended in '{session.state}'.", extra={"state": session.state, "seq": session.seq})


def session_move(
    session: Session,
    *,
    to: str,
    kind: str,
    actor: str,
    reason: str = "",
    decision_id: Any = None,
    stack: list[str] | None = None,
    idempotency_key: str = "",
    request_digest: str = "",
    now: dt.datetime | None = None,
) -> Move:
    """Write one move. The caller holds the session's lock and has checked that the move is allowed."""
    now = now or timezone.now()
    from_state, seq = session.state, session.seq + 1
    fields: dict[str, Any] = {"state": to, "seq": seq, "state_entered_at": now, "updated_at": now}
    if stack is not None:
        fields["stack"] = stack
    # Why the session waits for a person, set by every move into the handoff state; any move out clears it.
    fields["handoff_reason"] = handoff_reason_for(kind=kind) if to == session.machine.handoff_state else ""
    # A claim is on a wait in the human queue: any move ends that wait (a new one starts unclaimed).
    fields["claimed_by"] = None
    fields["claimed_at"] = None
    # Compare-and-set on seq: even without a row lock (SQLite), two writers cannot both win.
    if Session.objects.filter(pk=session.pk, seq=session.seq).update(**fields) != 1:
        session.refresh_from_db()
        raise _mismatch(session, from_state)
    Transition.objects.create(
        session=session,
        seq=seq,
        from_state=from_state,
        to_state=to,
        kind=kind,
        actor=actor,
        reason=reason,
        decision_id=decision_id,
        idempotency_key=idempotency_key,
        request_digest=request_digest,
    )
    transaction.on_commit(partial(metrics.session_moved, machine=session.machine.key, kind=kind))
    if connection.vendor == "postgresql":  # the next decide here guesses the state this move committed
        transaction.on_commit(partial(_seen, session.agent_id, session.key, to))
    for name, value in fields.items():
        setattr(session, name, value)
    return Move(from_state=from_state, state=to, seq=seq, kind=kind)


def anomaly_record(
    session: Session | None,
    *,
    agent: AgentRef,
    session_id: str,
    code: str,
    detail: str = "",
    raw: str = "",
    point: str = "",
    decision_id: Any = None,
) -> Move | None:
    """Record a model anomaly; apply the machine's model-failure policy. Returns the handoff move, if any."""
    Anomaly.objects.create(
        agent_id=agent.pk,
        session_id=session_id,
        point=point,
        code=code,
        detail=detail[:2000],
        raw=raw,
        decision_id=decision_id,
    )
    transaction.on_commit(partial(metrics.anomaly_recorded, code=code))
    if session is None:
        return None
    Session.objects.filter(pk=session.pk).update(anomaly_count=F("anomaly_count") + 1)
    session.anomaly_count += 1
    machine = session.machine
    ended = session.state in machine.terminal_states or session.state == machine.handoff_state
    if ended or session.anomaly_count < machine.max_anomalies:
        return None
    return session_move(
        session,
        to=machine.handoff_state,
        kind=TransitionKind.MODEL_FAILURE,
        actor=SYSTEM_MODEL_FAILURE,
        reason=f"{MODEL_FAILURE}: {session.anomaly_count} anomalies (latest {code})",
    )


def _refuse_after_commit(outcome: Move | DomainError) -> Move:
    if isinstance(outcome, DomainError):
        raise outcome
    return outcome


def session_transition(
    *,
    agent: AgentRef,
    session_id: str,
    to: str,
    expected_state: str,
    reason: str = "",
    decision_id: Any = None,
    idempotency_key: str = "",
) -> Move:
    """Move a session to ``to`` if it is in ``expected_state`` and the machine allows the move."""
    digest = _digest({"to": to, "expected_state": expected_state, "reason": reason, "decision_id": str(decision_id)})
    with transaction.atomic():
        session = _locked(agent, session_id)
        if idempotency_key:
            done = session.transitions.filter(idempotency_key=idempotency_key).first()
            if done is not None:
                if done.request_digest != digest:
                    raise IdempotencyConflict(f"Idempotency-Key '{idempotency_key}' was used with another body.")
                return Move(from_state=done.from_state, state=done.to_state, seq=done.seq, kind=done.kind)
        if decision_id is not None:
            _check_decision(agent, session, decision_id)
        outcome = _transition_locked(session, agent, to, expected_state, reason, decision_id, idempotency_key, digest)
    return _refuse_after_commit(outcome)


def _check_decision(agent: AgentRef, session: Session, decision_id: Any) -> None:
    """A move may cite a decision of the same agent about this session (or about none); anything else
    would fail the foreign key only at commit, as a server error, or link another agent's log."""
    cited = DecisionRecord.objects.filter(pk=decision_id, agent_id=agent.pk, session_id__in=["", session.key])
    if not cited.exists():
        raise InvalidRequest(
            "decision_id names no decision this agent made about this session.",
            errors={"decision_id": ["Unknown decision for this session."]},
        )


def _transition_locked(
    session: Session,
    agent: AgentRef,
    to: str,
    expected_state: str,
    reason: str,
    decision_id: Any,
    idempotency_key: str,
    digest: str,
) -> Move | DomainError:
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in session.machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, f"a move to '{to}'"):
        return handed_off
    allowed = session_allowed_targets(session)
    if to not in allowed:
        detail = f"'{session.state}' → '{to}' is not allowed; allowed: {', '.join(allowed) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=ILLEGAL_TRANSITION, detail=detail)
        return IllegalTransition(
            detail + ".",
            extra={
                "state": session.state,
                "seq": session.seq,
                "allowed_transitions": session_allowed_targets(session),
                "handed_off": handoff is not None,
            },
        )
    return session_move(
        session,
        to=to,
        kind=TransitionKind.MOVE,
        actor=agent.name,
        reason=reason,
        decision_id=decision_id,
        idempotency_key=idempotency_key,
        request_digest=digest,
    )


def session_action(*, agent: AgentRef, session_id: str, action: str) -> list[str]:
    """Check an action against the current state's whitelist; returns the whitelist when allowed."""
    with transaction.atomic():
        session = _locked(agent, session_id)
        whitelist = session_allowed_actions(session)
        if action in whitelist:
            return whitelist
        detail = f"'{action}' is not allowed in '{session.state}'; allowed: {', '.join(whitelist) or 'none'}"
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=ACTION_NOT_ALLOWED, detail=detail)
        refusal = ActionNotAllowed(
            detail + ".",
            extra={
                "state": session.state,
                "seq": session.seq,
                "allowed_actions": session_allowed_actions(session),
                "handed_off": handoff is not None,
            },
        )
    raise refusal


def session_handed_off(
    session: Session, agent: AgentRef, attempted: str, *, point: str = ""
) -> SessionHandedOff | None:
    """Refuse an agent's move of a session a person has (agents.sessions.handoff), as an anomaly: the
    refusal to raise once the anomaly is committed, or None when the session is not handed off."""
    refusal = handoff_refusal(session, attempted=attempted)
    if refusal is not None:
        detail = f"{attempted} while handed off ({refusal.extra['handoff_reason']})"
        anomaly_record(
            session, agent=agent, session_id=session.key, point=point, code=SESSION_HANDED_OFF, detail=detail
        )
    return refusal


def session_interrupt(*, agent: AgentRef, session_id: str, to: str, expected_state: str, reason: str = "") -> Move:
    """Set the current state aside and move to ``to``; ``session_resume`` comes back to it."""
    with transaction.atomic():
        session = _locked(agent, session_id)
        outcome: Move | DomainError
        machine = session.machine
        if session.state != expected_state:
            outcome = _mismatch(session, expected_state)
        elif session.state in machine.terminal_states:
            outcome = _closed(session)
        elif handed_off := session_handed_off(session, agent, f"an interrupt into '{to}'"):
            outcome = handed_off
        elif to not in machine.states or to in machine.terminal_states or to == session.state:
            outcome = IllegalTransition(
                f"Cannot interrupt into '{to}': it must be another, non-terminal state of {machine.key}.",
                extra={"state": session.state, "seq": session.seq},
            )
        else:
            outcome = session_move(
                session,
                to=to,
                kind=TransitionKind.INTERRUPT,
                actor=agent.name,
                reason=reason,
                stack=[*session.stack, session.state],
            )
    return _refuse_after_commit(outcome)


def session_resume(*, agent: AgentRef, session_id: str, expected_state: str, reason: str = "") -> Move:
    with transaction.atomic():
        session = _locked(agent, session_id)
        outcome: Move | DomainError
        if session.state != expected_state:
            outcome = _mismatch(session, expected_state)
        elif session.state in session.machine.terminal_states:
            outcome = _closed(session)
        elif handed_off := session_handed_off(session, agent, "a resume"):
            outcome = handed_off
        elif not session.stack:
            outcome = NothingToResume(
                "The session has no interrupted state to go back to.",
                extra={"state": session.state, "seq": session.seq},
            )
        else:
            outcome = session_move(
                session,
                to=session.stack[-1],
                kind=TransitionKind.RESUME,
                actor=agent.name,
                reason=reason,
                stack=session.stack[:-1],
            )
    return _refuse_after_commit(outcome)


def session_report_anomaly(
    *, agent: AgentRef, session_id: str, code: str, detail: str = "", raw: str = ""
) -> Move | None:
    """An anomaly the agent detected itself (invalid JSON, schema violation, retries exhausted)."""
    with transaction.atomic():
        session = _locked(agent, session_id)
        return anomaly_record(session, agent=agent, session_id=session.key, code=code, detail=detail, raw=raw)


def session_timeouts_sweep(*, now: dt.datetime | None = None) -> int:
    """Hand every session that has stayed too long in a state with a timeout to its machine's handoff
    state. Safe to run again and concurrently: each session is re-checked under its lock."""
    now = now or timezone.now()
    moved = 0
    for machine in StateMachine.objects.exclude(timeouts={}):
        for state, seconds in machine.timeouts.items():
            if state == machine.handoff_state or state in machine.terminal_states:
                continue
            cutoff = now - dt.timedelta(seconds=float(seconds))
            due = Session.objects.filter(machine=machine, state=state, state_entered_at__lte=cutoff)
            for pk in due.values_list("pk", flat=True).iterator():
                with transaction.atomic():
                    session = sessions_lock(Session.objects.filter(pk=pk)).first()
                    if session is None or session.state != state or session.state_entered_at > cutoff:
                        continue  # moved on meanwhile
                    session_move(
                        session,
                        to=machine.handoff_state,
                        kind=TransitionKind.TIMEOUT,
                        actor=SYSTEM_TIMEOUT,
                        reason=f"timeout: more than {seconds:g} s in {state}",
                        now=now,
                    )
                    moved += 1
    return moved


# -- feedback hints ------------------------------------------------------------------------------

_ANOMALY_HINTS = {
    "invalid_candidate_output": (
        "Your last {n} answers were not a usable candidate: reply with one JSON object "
        '{{"decision": ..., "confidence": 0..1, "reason": ...}} and nothing else.'
    ),
    "candidate_not_an_outcome": "You proposed {n} answers that are not outcomes of the point: use its outcomes.",
    ILLEGAL_TRANSITION: "You proposed {n} moves the flow does not allow: propose only allowed_transitions.",
    ACTION_NOT_ALLOWED: "You asked for {n} actions not allowed in their state: use only allowed_actions.",
    DECISION_MOVE_NOT_ALLOWED: "{n} decisions could not move the session as mapped from its state: re-check the flow.",
    SESSION_HANDED_OFF: "{n} moves of a session a person has were refused: stop driving it until it is returned.",
}


# What a session's feedback hints are counted from, in one statement (tables named as the models name
# them: tests/agents/services/test_sessions.py checks): the repeated anomalies grouped straight over their
# LIMIT subquery, the overruled decisions one by one, newest first (so that a decision about to be logged
# can be counted in, pushing the oldest out). Written by hand: the ORM's form (``pk__in`` a sliced
# queryset, then a UNION) joined the log back to itself across every partition and took longer to
# compile than to run (bench/RESULTS.md).
_FEEDBACK_BASIS_SQL = (
    "SELECT 'anomaly', code, '', COUNT(*), NULL FROM (SELECT code FROM agents_anomaly"
    " WHERE agent_id = %s AND session_id = %s ORDER BY created_at DESC LIMIT %s) a"
    " GROUP BY code HAVING COUNT(*) >= 2"
    " UNION ALL"
    " SELECT 'overruled', rule_key, decision, 1, created_at FROM (SELECT rule_key, decision, created_at"
    " FROM rules_decisionrecord WHERE agent_id = %s AND session_id = %s AND overridden = %s AND ruled_by = %s"
    " ORDER BY created_at DESC LIMIT %s) d"
)
# The same, as two columns of the session's own row (``session_read`` on PostgreSQL): one statement.
_FEEDBACK_ANOMALIES_PG = (
    "(SELECT json_agg(json_build_array(g.code, g.n)) FROM (SELECT code, COUNT(*) AS n FROM (SELECT code"
    " FROM agents_anomaly WHERE agent_id = s.agent_id AND session_id = s.key ORDER BY created_at DESC LIMIT %s) a"
    " GROUP BY code HAVING COUNT(*) >= 2) g)"
)
# ``ruled_by`` is written out (RuledBy.HARD_RULE), not a parameter: the statement is prepared, and a generic
# plan can use the partial index decision_session_overruled_idx only when its predicate is in the text.
_FEEDBACK_OVERRULED_PG = (
    "(SELECT json_agg(json_build_array(d.rule_key, d.decision) ORDER BY d.created_at DESC) FROM"
    " (SELECT rule_key, decision, created_at FROM rules_decisionrecord WHERE agent_id = s.agent_id"
    " AND session_id = s.key AND overridden AND ruled_by = 'hard_rule'"
    " ORDER BY created_at DESC LIMIT %s) d)"
)


@dataclass(frozen=True)
class FeedbackBasis:
    """A session's feedback counted before a decision is logged, to give the hints as they stand after it.

    ``anomalies``: the codes seen at least twice among the session's latest ``limit`` anomalies, with
    their counts; ``overruled``: the rule and outcome of its latest ``limit`` overruled decisions,
    newest first.
    """

    anomalies: tuple[tuple[str, int], ...] = ()
    overruled: tuple[tuple[str, str], ...] = ()
    limit: int = FEEDBACK_LIMIT

    def hints(self, *, then: DecisionRecord | None = None) -> list[str]:
        """The hints once ``then`` (logged after this was read, with no anomaly of its own) is in the log:
        what ``session_feedback`` would read at that moment."""
        overruled = list(self.overruled)
        if then is not None and then.overridden and then.ruled_by == RuledBy.HARD_RULE:
            overruled.insert(0, (then.rule_key, then.decision))
        counts = Counter(overruled[: self.limit])
        rows = [("anomaly", code, "", n) for code, n in self.anomalies]
        rows += [("overruled", rule, decision, n) for (rule, decision), n in counts.items() if n >= 2]
        return _hints(rows)


def _feedback_basis(session: Session, limit: int) -> FeedbackBasis:
    params = (session.agent_id, session.key, limit, session.agent_id, session.key, True, RuledBy.HARD_RULE.value, limit)
    with connection.cursor() as cursor:
        cursor.execute(_FEEDBACK_BASIS_SQL, params)
        rows = cursor.fetchall()
    anomalies = tuple((code, n) for kind, code, _, n, _ in rows if kind == "anomaly")
    newest_first = sorted((row for row in rows if row[0] == "overruled"), key=lambda row: row[4], reverse=True)
    return FeedbackBasis(
        anomalies=anomalies, overruled=tuple((rule, decision) for _, rule, decision, _, _ in newest_first), limit=limit
    )


def session_feedback(session: Session, *, limit: int = FEEDBACK_LIMIT) -> list[str]:
    """Short hints for the agent's next prompt when a session keeps going wrong the same way: the kinds of
    anomaly and of overruled decision seen at least twice among the session's latest ``limit`` of each."""
    return _feedback_basis(session, limit).hints()


def _hints(rows: list[tuple[str, str, str, int]]) -> list[str]:
    hints: list[str] = []
    for kind, key, decision, n in sorted(rows):
        if kind == "anomaly":
            template = _ANOMALY_HINTS.get(key, "{n} anomalies '" + key + "' in this session.")
            hints.append(template.format(n=n))
        else:
            hints.append(
                f"Your candidate was overruled {n} times by rule {key}, which decided {decision}: "
                "messages like these are not yours to settle."
            )
    return hints

"""Reading a session on the hot paths: locked for a move, or as last committed for a decide that moves
nothing — and that decide's read folded into its log INSERT when the state is guessed (PostgreSQL).

The statements are ``rules.decisions.statements``' (named placeholders, built once per database); here:
turning their rows back into a ``Session`` with its ``StateMachine``, the SQLite lock, and the states
this process has seen.

The guess. The state each session was last seen in by this process (a decide's read, a move it
committed) lets the next decide of the session evaluate before reading it — never an answer:
``session_log_if_state`` logs only if the session is still in that state, checked in the same
statement. Only a ``rules.decisions.compute.SessionSeen`` is guessed (the state, nothing else), so a
point whose rules read more of a session is never decided on one
(``rules.decisions.compute.session_guess_allowed``), and ``ARBITER_DECIDE_GUESS_SESSION_STATE`` turns
it off. Bounded: past ``SEEN_STATES_MAX`` the session seen
longest ago is forgotten; a session not in it costs a read first.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, NotSupportedError, OperationalError, connection, connections
from django.db.models import F, QuerySet

from agents.errors import SessionBusy
from agents.sessions.codes import FEEDBACK_LIMIT
from agents.sessions.feedback import FeedbackBasis, feedback_basis
from agents.sessions.models import Anomaly, Session
from decision_service.db import prepared_cursor, quick_converters
from rules.decisions import statements
from rules.decisions.session_data import recent_lists
from rules.models import DecisionRecord, StateMachine


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
class _SessionRow:
    """How to turn a session read's row back into the session and its machine."""

    session_fields: tuple[str, ...]
    machine_fields: tuple[str, ...]
    converters: dict[int, tuple[list[Any], Any]]


# Per thread, as Django's connections are: the converters are bound to the connection that built them.
_session_rows = threading.local()


def _session_row() -> _SessionRow:
    found: _SessionRow | None = getattr(_session_rows, connection.alias, None)
    if found is not None:
        return found
    session_fields, machine_fields = Session._meta.concrete_fields, StateMachine._meta.concrete_fields
    # The same converters the ORM applies to these columns (JSON decoding, aware datetimes on SQLite, …).
    compiler = Session.objects.all().query.get_compiler(connection=connection)
    session_table, machine_table = Session._meta.db_table, StateMachine._meta.db_table
    cols = [f.get_col(session_table) for f in session_fields] + [f.get_col(machine_table) for f in machine_fields]
    found = _SessionRow(
        session_fields=tuple(f.attname for f in session_fields),
        machine_fields=tuple(f.attname for f in machine_fields),
        converters={
            i: (quick_converters(converters), expression)
            for i, (converters, expression) in compiler.get_converters(cols).items()
        },
    )
    setattr(_session_rows, connection.alias, found)
    return found


def _session_fetch(
    *, lock: bool, with_feedback: bool, params: dict[str, Any]
) -> tuple[Session, tuple[Any, ...]] | None:
    """The session with its machine, and the values of any columns selected after them (with a ``history``
    parameter, the last is the keyword lists of its latest decisions)."""
    sql = statements.session_select(
        session=Session, anomaly=Anomaly, lock=lock, with_feedback=with_feedback, with_recent="history" in params
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    return session_from_row(row)


def session_from_row(row: tuple[Any, ...]) -> tuple[Session, tuple[Any, ...]]:
    """A row that starts with ``rules.decisions.statements.session_select_list``'s session and machine
    columns: the session with its machine, and the values of the columns after them, unconverted."""
    shape = _session_row()
    values = list(row)
    wrapper = connections[DEFAULT_DB_ALIAS]  # the connection itself: the proxy looks it up on every attribute
    for i, (converters, expression) in shape.converters.items():
        for convert in converters:
            values[i] = convert(values[i], expression, wrapper)
    split = len(shape.session_fields)
    end = split + len(shape.machine_fields)
    db = connection.alias
    session = Session.from_db(db, shape.session_fields, values[:split])
    machine = StateMachine.from_db(db, shape.machine_fields, values[split:end])
    Session.machine.field.set_cached_value(session, machine)
    return session, tuple(values[end:])


Recent = tuple[frozenset[str], ...]


def _recent(history: int, extra: tuple[Any, ...]) -> Recent:
    return recent_lists(_json_value(extra[-1])) if history else ()


def session_lock(*, agent_id: Any, key: str) -> Session | None:
    """The agent's session ``key`` with its machine, locked until the transaction ends (call inside
    ``atomic``); ``None`` when the agent has no such session. The hot paths' form of ``sessions_lock``."""
    return session_lock_with_recent(agent_id=agent_id, key=key, history=0)[0]


def session_lock_with_recent(*, agent_id: Any, key: str, history: int) -> tuple[Session | None, Recent]:
    """``session_lock``, and (``history`` > 0) the keyword lists of the session's latest ``history`` logged
    decisions, newest first, read in the same statement (``rules.decisions.session_data.recent_lists``)."""
    if connection.vendor == "sqlite":
        _sqlite_write_lock(Session.objects.filter(agent_id=agent_id, key=key))  # see sessions_lock
    params: dict[str, Any] = {"agent_id": agent_id, "key": key, **({"history": history} if history else {})}
    fetched = _session_fetch(lock=True, with_feedback=False, params=params)
    if fetched is None:
        return None, ()
    return fetched[0], _recent(history, fetched[1])


def session_lock_with_feedback(*, agent_id: Any, key: str) -> tuple[Session | None, FeedbackBasis]:
    """``session_lock``, and what its feedback hints are counted from as the lock was taken: for a caller
    whose answer shows the session and records no anomaly of its own (the tool-call check and result).
    One statement on PostgreSQL (the feedback columns ride on the locking read); SQLite reads them apart."""
    if connection.vendor != "postgresql":
        session = session_lock(agent_id=agent_id, key=key)
        return session, (feedback_basis(session) if session is not None else FeedbackBasis())
    fetched = _session_fetch(
        lock=True, with_feedback=True, params={"agent_id": agent_id, "key": key, "limit": FEEDBACK_LIMIT}
    )
    if fetched is None:
        return None, FeedbackBasis()
    session, extra = fetched
    return session, FeedbackBasis.from_columns(extra[0], extra[1], FEEDBACK_LIMIT)


def session_read(*, agent_id: Any, key: str, limit: int = FEEDBACK_LIMIT) -> tuple[Session | None, FeedbackBasis]:
    """The agent's session ``key`` with its machine as last committed, without a lock, and what its
    feedback hints are counted from: for a caller that only reads the session (a decide that moves
    nothing and records nothing against it). One statement on PostgreSQL; SQLite reads the two apart.
    """
    session, basis, _ = session_read_with_recent(agent_id=agent_id, key=key, history=0, limit=limit)
    return session, basis


def session_read_with_recent(
    *, agent_id: Any, key: str, history: int, limit: int = FEEDBACK_LIMIT
) -> tuple[Session | None, FeedbackBasis, Recent]:
    """``session_read``, and (``history`` > 0) the keyword lists of the session's latest ``history`` logged
    decisions, newest first: in the same statement as the session, so a point whose rules read them costs
    no round trip more than one whose rules do not."""
    params: dict[str, Any] = {"agent_id": agent_id, "key": key, "limit": limit}
    if history:
        params["history"] = history
    if connection.vendor != "postgresql":
        fetched = _session_fetch(lock=False, with_feedback=False, params=params)
        if fetched is None:
            return None, FeedbackBasis(), ()
        session = fetched[0]
        return session, feedback_basis(session, limit), _recent(history, fetched[1])
    fetched = _session_fetch(lock=False, with_feedback=True, params=params)
    if fetched is None:
        # Gone (deleted behind this process's back): a guess of it must not outlive it.
        _seen_states.pop((connection.alias, agent_id, key), None)
        return None, FeedbackBasis(), ()
    session, extra = fetched
    anomalies, overruled = extra[:2]
    session_seen(agent_id, key, session.state)
    return session, FeedbackBasis.from_columns(anomalies, overruled, limit), _recent(history, extra)


# -- the guess: a decide's read folded into its log insert (PostgreSQL) ---------------------------------

SEEN_STATES_MAX = 10_000
_seen_states: dict[tuple[str, Any, str], str] = {}


def session_state_seen(*, agent_id: Any, key: str) -> str | None:
    """What this process last saw of the session; ``None`` when it saw none, with the guess turned off,
    and on SQLite always: only PostgreSQL can check a guess (``session_log_if_state`` needs a writable CTE)."""
    if connection.vendor != "postgresql" or not settings.ARBITER_DECIDE_GUESS_SESSION_STATE:
        return None
    return _seen_states.get((connection.alias, agent_id, key))


def sessions_seen_forget() -> None:
    """Forget every state seen (the next decide of each session reads it first)."""
    _seen_states.clear()


def session_seen(agent_id: Any, key: str, state: str) -> None:
    """Remember ``state`` as the one the session was last seen in by this process."""
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
    # What the answer's session object shows (not saved, not for writing): None with no session.
    session: Session | None = None


def _json_value(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _session_shown(agent_id: Any, key: str, state: str, columns: tuple[Any, ...]) -> Session:
    """The session and its machine from the columns ``statements.session_log_if_state`` selects for the
    answer: enough for ``agents.sessions.presenters``, nothing more."""
    seq, handoff_reason, values, claimed_by_id, machine_key, transitions, actions, terminal, handoff, fields, events = (
        columns
    )
    machine = StateMachine(
        key=machine_key,
        transitions=_json_value(transitions),
        actions=_json_value(actions),
        terminal_states=_json_value(terminal),
        handoff_state=handoff,
        fields=_json_value(fields),
        events=_json_value(events),
    )
    session = Session(
        agent_id=agent_id,
        key=key,
        state=state,
        seq=seq,
        handoff_reason=handoff_reason,
        field_values=_json_value(values),
        claimed_by_id=claimed_by_id,
    )
    Session.machine.field.set_cached_value(session, machine)
    return session


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
    log = statements.log_insert()
    params = {"agent_id": agent_id, "key": key, "state": state, "limit": limit, **log.params(record)}
    with prepared_cursor() as cursor:
        cursor.execute(statements.session_log_if_state(session=Session, anomaly=Anomaly), params)
        row = cursor.fetchone()
    if row is None:
        _seen_states.pop((connection.alias, agent_id, key), None)
        return LoggedIfState(logged=False, state=None, basis=FeedbackBasis())
    current, anomalies, overruled, *shown, logged = row
    session_seen(agent_id, key, current)
    if logged:
        log.saved(record)
    return LoggedIfState(
        logged=bool(logged),
        state=current,
        basis=FeedbackBasis.from_columns(anomalies, overruled, limit),
        session=_session_shown(agent_id, key, current, tuple(shown)),
    )

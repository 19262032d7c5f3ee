"""Every statement of the decide path written by hand, in one module, each with named placeholders.

Why by hand: the ORM compiled the same statements on every decide, which cost more than running them
(bench/RESULTS.md, "Where the time goes"); PostgreSQL prepares these once per connection
(``decision_service.db.prepared_cursor``).

- Names (tables, columns) come only from the models' metadata; every value is a named parameter,
  ``%(name)s`` (psycopg and Django's SQLite cursor alike), bound from a mapping: no caller counts
  positions, and a statement folded into another keeps its parameters' names.
- The agents app passes its own models in (``session``, ``anomaly``): rules does not import agents.
- Each statement is built once per database alias (and per model passed in) and kept.

The statements: the decision log's INSERT (with and without the Idempotency-Key row), the "ask your LLM"
counter's upsert, a session read with its machine (locked or not, with or without its feedback), a
session's feedback rows, and the folded session read + log INSERT (PostgreSQL).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import NOT_PROVIDED, Model

from decision_service.db import db_values
from decision_service.sequence import SequenceIdField
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord, RuledBy, StateMachine

T = TypeVar("T")
_built: dict[tuple[Any, ...], Any] = {}


def _once(name: str, build: Callable[[], T], *models: type[Model]) -> T:
    """``build()`` for the current database and these models, made on first use and kept."""
    key = (name, connection.alias, *models)
    found = _built.get(key)
    if found is None:
        found = _built[key] = build()
    return found


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _inner_table(model: type[Model]) -> str:
    """A table named inside a subquery: as written before the statements moved here (unquoted when a plain
    lower-case name, as all of these are), so the text, and what counts a statement's outer table, stay."""
    name = model._meta.db_table
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else _quote(name)


def _columns(model: type[Model]) -> dict[str, str]:
    return {f.name: _quote(f.column) for f in model._meta.concrete_fields}


# -- the decision log ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogInsert:
    """The decision log's INSERT, written once from the model's own metadata.

    ``insert`` is the statement, ``keyed_insert`` the same after the Idempotency-Key row's INSERT (a
    writable CTE: PostgreSQL). Each column's value is the parameter ``log_<attname>``; the key row's are
    ``key_agent_id``, ``key_key``, ``key_decision_id``, ``key_created_at``. ``typed_values`` is the
    ``VALUES`` list with each parameter cast to its column's type, for an ``INSERT … SELECT`` (where
    nothing else types a parameter): cast without a length (``varchar``, not ``varchar(64)``), so that a
    value too long is refused by the column as in a plain INSERT instead of cut short by the cast.
    """

    table: str
    columns: str
    typed_values: str
    insert: str
    keyed_insert: str
    fields: tuple[Any, ...]

    def params(self, record: DecisionRecord) -> dict[str, Any]:
        """The row's values as the ORM would send them (``pre_save``, then the field's database form)."""
        return db_values(self.fields, record, add=True, prefix="log_")

    @staticmethod
    def key_params(record: DecisionRecord) -> dict[str, Any]:
        return {
            "key_agent_id": record.agent_id,
            "key_key": record.idempotency_key,
            "key_decision_id": record.pk,
            "key_created_at": record.created_at,
        }

    @staticmethod
    def saved(record: DecisionRecord) -> None:
        """Mark ``record`` as in the database, as ``save()`` does after its INSERT."""
        record._state.adding = False
        record._state.db = connection.alias


def _log_insert_build() -> LogInsert:
    # The sequence id is the database's to fill (decision_service.sequence): left out, as the ORM leaves it.
    fields = tuple(f for f in DecisionRecord._meta.concrete_fields if not isinstance(f, SequenceIdField))
    for f in fields:
        # The ORM leaves such columns out of an INSERT for the database to fill: this statement names all.
        if f.generated or f.db_default is not NOT_PROVIDED:
            raise ImproperlyConfigured(f"The log INSERT cannot write {f.name}: generated or a database default.")

    def cast(f: Any) -> str:
        # Without the length: an explicit cast to varchar(n) cuts a value short where the column refuses it.
        return f"%(log_{f.attname})s::" + re.sub(r"\(\d+\)$", "", f.db_type(connection))

    table, columns = _quote(DecisionRecord._meta.db_table), ", ".join(_quote(f.column) for f in fields)
    values = ", ".join(f"%(log_{f.attname})s" for f in fields)
    insert = f"INSERT INTO {table} ({columns}) VALUES ({values})"  # noqa: S608  (names from metadata)
    keys = _quote(DecisionIdempotencyKey._meta.db_table)
    return LogInsert(
        table=table,
        columns=columns,
        typed_values=", ".join(cast(f) for f in fields),
        insert=insert,
        keyed_insert=f"WITH idempotency AS (INSERT INTO {keys} (agent_id, key, decision_id, created_at)"  # noqa: S608
        f" VALUES (%(key_agent_id)s, %(key_key)s, %(key_decision_id)s, %(key_created_at)s)) {insert}",
        fields=fields,
    )


def log_insert() -> LogInsert:
    """The decision log's INSERT for the current database."""
    return _once("log_insert", _log_insert_build)


def candidate_count_upsert() -> str:
    """One more "ask your LLM" answer for (``point``, ``agent_id``, ``day``), named ``agent_name`` too.

    ``INSERT … ON CONFLICT DO UPDATE SET count = count + 1`` (PostgreSQL and SQLite alike) increments in
    the database, so concurrent requests never read-modify-write the row and never lose a count.
    """

    def build() -> str:
        table = _quote(CandidateRequestCount._meta.db_table)
        return (
            f"INSERT INTO {table} (point, agent_id, agent_name, day, count)"  # noqa: S608
            " VALUES (%(point)s, %(agent_id)s, %(agent_name)s, %(day)s, 1)"
            f" ON CONFLICT (point, agent_id, day) DO UPDATE SET count = {table}.count + 1"
        )

    return _once("candidate_count_upsert", build)


# -- a session's feedback ------------------------------------------------------------------------------
#
# What a session's feedback hints are counted from: its latest ``limit`` anomaly codes, and the rule and
# outcome of its latest ``limit`` overruled decisions, newest first. Only the rows: the counting is done
# once, in Python (agents.sessions.feedback). ``ruled_by`` is written out (RuledBy.HARD_RULE), not a
# parameter: the statement is prepared, and a generic plan can use the partial index
# decision_session_overruled_idx only when its predicate is in the text.
_OVERRULED = f"overridden AND ruled_by = '{RuledBy.HARD_RULE.value}'"


def _latest_anomalies(anomaly: type[Model], agent: str, key: str) -> str:
    return (
        f"SELECT code, created_at FROM {_inner_table(anomaly)}"  # noqa: S608
        f" WHERE agent_id = {agent} AND session_id = {key} ORDER BY created_at DESC LIMIT %(limit)s"
    )


def _latest_overruled(agent: str, key: str) -> str:
    return (
        f"SELECT rule_key, decision, created_at FROM {_inner_table(DecisionRecord)}"  # noqa: S608
        f" WHERE agent_id = {agent} AND session_id = {key} AND {_OVERRULED} ORDER BY created_at DESC LIMIT %(limit)s"
    )


def feedback_rows(*, anomaly: type[Model]) -> str:
    """The feedback rows of the session (``agent_id``, ``key``), at most ``limit`` of each kind:
    ``('anomaly', code, '', created_at)`` and ``('overruled', rule_key, decision, created_at)``."""

    def build() -> str:
        agent, key = "%(agent_id)s", "%(key)s"
        return (
            f"SELECT 'anomaly', code, '', created_at FROM ({_latest_anomalies(anomaly, agent, key)}) a"  # noqa: S608
            f" UNION ALL SELECT 'overruled', rule_key, decision, created_at FROM ({_latest_overruled(agent, key)}) d"
        )

    return _once("feedback_rows", build, anomaly)


def _feedback_columns(anomaly: type[Model]) -> list[str]:
    """The same rows as two JSON columns of the session's own row ``s`` (PostgreSQL): one statement."""
    agent, key = "s.agent_id", "s.key"
    return [
        f"(SELECT json_agg(a.code) FROM ({_latest_anomalies(anomaly, agent, key)}) a)",  # noqa: S608
        "(SELECT json_agg(json_build_array(d.rule_key, d.decision) ORDER BY d.created_at DESC)"  # noqa: S608
        f" FROM ({_latest_overruled(agent, key)}) d)",
    ]


# -- what rules read of a session's latest decisions --------------------------------------------------


def _recent_lists_column() -> str:
    """The keyword lists hit by each of the session ``s``'s latest ``history`` logged decisions, newest first,
    as one JSON column (a list of lists of list keys): what ``session_keyword_seen`` conditions read. A scalar
    subquery of the session's own row, so it costs no statement of its own; it walks the index
    decision_session_seq_idx (session_id, sequence_id) backwards, ``history`` (at most 50) entries: the
    latest in the order they were written (decision_service.sequence)."""
    inner = (
        f"SELECT keyword_hits, sequence_id FROM {_inner_table(DecisionRecord)}"  # noqa: S608
        " WHERE agent_id = s.agent_id AND session_id = s.key ORDER BY sequence_id DESC LIMIT %(history)s"
    )
    if connection.vendor == "postgresql":
        lists = "ARRAY(SELECT jsonb_object_keys(h.keyword_hits))"
        return f"(SELECT json_agg({lists} ORDER BY h.sequence_id DESC) FROM ({inner}) h)"  # noqa: S608
    # SQLite (no ORDER BY inside an aggregate before 3.44): the rows are aggregated in the subquery's order.
    lists = "json((SELECT json_group_array(k.key) FROM json_each(h.keyword_hits) k))"
    return f"(SELECT json_group_array({lists}) FROM ({inner}) h)"  # noqa: S608


# -- a session with its machine ------------------------------------------------------------------------


def session_select_list(*, session: type[Model], anomaly: type[Model], with_feedback: bool) -> list[str]:
    """``session_select``'s columns: the session ``s``'s, its machine ``m``'s, and (``with_feedback``) the two
    feedback columns (parameter ``limit``); for a statement that reads a session with more (the tool-call
    result reads it with its call and attempt, ``agents.tools.statements``)."""
    selected = [f"s.{_quote(f.column)}" for f in session._meta.concrete_fields]
    selected += [f"m.{_quote(f.column)}" for f in StateMachine._meta.concrete_fields]
    if with_feedback:
        selected += _feedback_columns(anomaly)
    return selected


def session_select(
    *, session: type[Model], anomaly: type[Model], lock: bool, with_feedback: bool, with_recent: bool = False
) -> str:
    """The session (``agent_id``, ``key``) and its machine, every concrete column of both in model order
    (``s.`` then ``m.``); ``lock``: ``FOR UPDATE OF s`` where the database has it; ``with_feedback``
    (PostgreSQL): then the two feedback columns, ``limit`` rows of each at most; ``with_recent``: then the
    keyword lists of its latest ``history`` decisions (``_recent_lists_column``) — only for a point whose
    rules read them, so every other point's read is the statement it was."""

    def build() -> str:
        column = _columns(session)
        selected = session_select_list(session=session, anomaly=anomaly, with_feedback=with_feedback)
        if with_recent:
            selected.append(_recent_lists_column())
        sql = (
            f"SELECT {', '.join(selected)} FROM {_quote(session._meta.db_table)} s"  # noqa: S608
            f" INNER JOIN {_quote(StateMachine._meta.db_table)} m"
            f" ON m.{_quote(StateMachine._meta.pk.column)} = s.{column['machine']}"
            f" WHERE s.{column['agent']} = %(agent_id)s AND s.{column['key']} = %(key)s"
        )
        if lock and connection.features.has_select_for_update_of:
            sql += " FOR UPDATE OF s"
        return sql

    return _once(f"session_select:{lock}:{with_feedback}:{with_recent}", build, session, anomaly)


def session_log_if_state(*, session: type[Model], anomaly: type[Model]) -> str:
    """PostgreSQL: the session (``agent_id``, ``key``) as committed — its state, its two feedback
    columns, then what the answer's session object shows (``seq``, ``handoff_reason``, ``field_values``,
    ``claimed_by_id``, and of its machine ``key``, ``transitions``, ``actions``, ``terminal_states``,
    ``handoff_state``, ``fields``, ``events``) —
    and the log row (``log_*``) inserted only if that state is ``state``; the last column counts the rows
    inserted (0 or 1).

    One snapshot for all three parts: the INSERT is made only if the state read is the one the rules saw,
    and the feedback columns are counted as before the row (a writable CTE's rows are not visible to the
    rest of its statement), which is what ``FeedbackBasis.hints(then=…)`` expects.
    """

    def build() -> str:
        column = _columns(session)
        log = log_insert()
        anomalies, overruled = _feedback_columns(anomaly)
        machine = _columns(StateMachine)
        shown = ", ".join(
            [f"s.{column[name]} AS {name}" for name in ("seq", "handoff_reason", "field_values")]
            + [f"s.{column['claimed_by']} AS claimed_by_id"]
            + [
                f"m.{machine[name]} AS machine_{name}"
                for name in ("key", "transitions", "actions", "terminal_states", "handoff_state", "fields", "events")
            ]
        )
        return (
            f"WITH current AS (SELECT s.{column['state']} AS state, {anomalies}, {overruled}, {shown}"  # noqa: S608
            f" FROM {_quote(session._meta.db_table)} s"
            f" INNER JOIN {_quote(StateMachine._meta.db_table)} m"
            f" ON m.{_quote(StateMachine._meta.pk.column)} = s.{column['machine']}"
            f" WHERE s.{column['agent']} = %(agent_id)s AND s.{column['key']} = %(key)s),"
            f" logged AS (INSERT INTO {log.table} ({log.columns}) SELECT {log.typed_values} FROM current"
            " WHERE current.state = %(state)s::text RETURNING 1)"
            " SELECT current.*, (SELECT COUNT(*) FROM logged) FROM current"
        )

    return _once("session_log_if_state", build, session, anomaly)

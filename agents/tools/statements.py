"""The tool-call check's and result's hot statements, written by hand as the decide path's are
(``rules.decisions.statements``).

Why by hand: profiled over many requests (bench/http/profile.py, bench/RESULTS.md "Profile (h25-h)"),
the ORM compiling these few statements on every request cost the server more than anything else in a
check or a result. Names come from the models' metadata; values are named parameters in their database
form (``get_db_prep_save``); rows come back as model instances through each field's ``from_db_value``,
as the ORM's own reads give them. On PostgreSQL they run prepared (``decision_service.db``).

Folded (PostgreSQL, ``folded()``; bench/RESULTS.md "One statement each"): the round trips were what was
left of a check's and a result's cost, each one the database's time and the server's (the driver, Django's
cursor wrapper). A new call's start is one INSERT of the call and its first attempt that checks the retry
lease and the operation id itself (``call_start_new``; anything else goes the long way, as before); a
result reads the session, the call and the attempt in one locking read (``result_locked``) and writes the
attempt and the call in one UPDATE (``update_both``). SQLite has no writable CTE: it sends them apart.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Model

from agents.sessions.codes import FEEDBACK_LIMIT
from agents.sessions.feedback import FeedbackBasis
from agents.sessions.models import Anomaly, Session
from agents.sessions.reads import session_from_row
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from decision_service.db import built_per_database, db_values, prepared_cursor, quick_converters
from decision_service.sequence import SequenceIdField
from rules.decisions.statements import session_select_list
from rules.models import StateMachine

M = TypeVar("M", bound=Model)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def folded() -> bool:
    """Whether the check's start and the result's reads and writes go as one statement each: PostgreSQL
    (writable CTEs, ``INSERT … ON CONFLICT``, ``FOR UPDATE OF`` several tables). Elsewhere (SQLite, which has
    only a database write lock) they go as the separate statements they fold."""
    return connection.vendor == "postgresql"


def _select_list(model: type[Model], alias: str) -> str:
    return ", ".join(f"{alias}.{_q(f.column)}" for f in model._meta.concrete_fields)


_converters: dict[tuple[str, type[Model]], list[tuple[Any, list[Any]]]] = {}


def _chain(model: type[Model]) -> list[tuple[Any, list[Any]]]:
    """Each concrete field's column and converters (the backend's, then the field's), as the ORM applies."""
    key = (connection.alias, model)
    chain = _converters.get(key)
    if chain is None:
        fields: list[Any] = list(model._meta.concrete_fields)
        chain = _converters[key] = [
            (col, quick_converters(connection.ops.get_db_converters(col) + f.get_db_converters(connection)))
            for f in fields
            for col in (f.get_col(model._meta.db_table),)
        ]
    return chain


def _converted(model: type[Model], attname: str, value: Any) -> Any:
    index = [f.attname for f in model._meta.concrete_fields].index(attname)
    col, converters = _chain(model)[index]
    for convert in converters:
        value = convert(value, col, connection)
    return value


def _instance(model: type[M], values: Sequence[Any]) -> M:
    """A row as the ORM loads it: each value through the backend's and its field's converters (SQLite's
    datetimes, JSON), then ``Model.from_db``."""
    chain = _chain(model)
    converted = list(values)
    for i, (col, converters) in enumerate(chain):
        for convert in converters:
            converted[i] = convert(converted[i], col, connection)
    return model.from_db(connection.alias, [f.attname for f in model._meta.concrete_fields], converted)


def _lock() -> str:
    return " FOR UPDATE OF a, c" if connection.features.has_select_for_update_of else ""


@built_per_database
def _texts() -> dict[str, str]:
    call, attempt, session = (_q(m._meta.db_table) for m in (ToolCall, ToolAttempt, Session))
    lease = (
        f"SELECT c.{_q('operation_id')}, c.{_q('tool')}, c.{_q('retry_at')} FROM {call} c"  # noqa: S608
        f" WHERE c.{_q('session_id')} = %(session)s AND c.{_q('state')} = %(state)s"
        f" AND c.{_q('status')} = %(status)s AND c.{_q('retry_at')} > %(now)s"
    )
    order = f" ORDER BY c.{_q('retry_at')} DESC LIMIT 1"
    return {
        "by_operation": f"SELECT {_select_list(ToolCall, 'c')} FROM {call} c"  # noqa: S608
        f" WHERE c.{_q('agent_id')} = %(agent)s AND c.{_q('operation_id')} = %(operation)s",
        "lease": lease + order,
        "lease_excluding": lease + f" AND c.{_q('id')} <> %(exclude)s" + order,
        "session_key": f"SELECT s.{_q('key')} FROM {call} c INNER JOIN {session} s"  # noqa: S608
        f" ON s.{_q('id')} = c.{_q('session_id')}"
        f" WHERE c.{_q('agent_id')} = %(agent)s AND c.{_q('operation_id')} = %(operation)s",
        "attempt_locked": f"SELECT {_select_list(ToolAttempt, 'a')}, {_select_list(ToolCall, 'c')}"  # noqa: S608
        f" FROM {attempt} a INNER JOIN {call} c ON c.{_q('id')} = a.{_q('call_id')}"
        f" AND a.{_q('attempt')} = c.{_q('attempt')}"
        f" WHERE c.{_q('agent_id')} = %(agent)s AND c.{_q('operation_id')} = %(operation)s" + _lock(),
    }


def call_by_operation(agent_id: int, operation_id: str) -> ToolCall | None:
    """The agent's call with this operation id (unique per agent), or None."""
    with prepared_cursor() as cursor:
        cursor.execute(_texts()["by_operation"], {"agent": agent_id, "operation": operation_id})
        row = cursor.fetchone()
    return None if row is None else _instance(ToolCall, row)


def lease_holder(
    session_id: int, state: str, status: str, now: dt.datetime, exclude: int | None
) -> tuple[str, str, dt.datetime] | None:
    """The operation of this session in this state with this status whose ``retry_at`` is after ``now``
    and latest (other than ``exclude``): its operation id, tool and ``retry_at``; or None."""
    params: dict[str, Any] = {"session": session_id, "state": state, "status": status, "now": now}
    if exclude is not None:
        params["exclude"] = exclude
    with prepared_cursor() as cursor:
        cursor.execute(_texts()["lease" if exclude is None else "lease_excluding"], params)
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1], _converted(ToolCall, "retry_at", row[2]))


def session_key_of(agent_id: int, operation_id: str) -> str | None:
    """The key of the session the agent's operation belongs to, or None for no such operation."""
    with prepared_cursor() as cursor:
        cursor.execute(_texts()["session_key"], {"agent": agent_id, "operation": operation_id})
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def attempt_locked(agent_id: int, operation_id: str) -> ToolAttempt | None:
    """The operation's current attempt with its call (``attempt.call``), both locked (PostgreSQL); None when
    the call has no attempt yet (or there is no such call)."""
    with prepared_cursor() as cursor:
        cursor.execute(_texts()["attempt_locked"], {"agent": agent_id, "operation": operation_id})
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(ToolAttempt._meta.concrete_fields)
    attempt = _instance(ToolAttempt, row[:width])
    attempt.call = _instance(ToolCall, row[width:])
    return attempt


_written: dict[tuple[Any, ...], tuple[str, list[Any]]] = {}


def _update_text(model: type[Model], names: tuple[str, ...]) -> tuple[str, list[Any]]:
    key = ("update", connection.alias, model, names)
    found = _written.get(key)
    if found is None:
        meta = model._meta
        chosen: list[Any] = [meta.get_field(name) for name in names]
        sets = ", ".join(f"{_q(f.column)} = %({f.attname})s" for f in chosen)
        pk: Any = meta.pk
        sql = f"UPDATE {_q(meta.db_table)} SET {sets} WHERE {_q(pk.column)} = %(pk)s"  # noqa: S608
        found = _written[key] = (sql, chosen)
    return found


def update(instance: Model, fields: Sequence[str]) -> None:
    """``instance.save(update_fields=fields)`` without compiling it (an ``auto_now`` field is set, as by
    ``save``); no signals: neither model has receivers or history."""
    sql, chosen = _update_text(type(instance), tuple(fields))
    params = db_values(chosen, instance, add=False)
    params["pk"] = instance.pk
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)


def _insert_text(model: type[Model], with_pk: bool) -> tuple[str, list[Any]]:
    key = ("insert", connection.alias, model, with_pk)
    found = _written.get(key)
    if found is None:
        meta = model._meta
        # The sequence ids are the database's to fill (decision_service.sequence), as the ORM leaves them.
        fields = [
            f for f in meta.concrete_fields if (with_pk or not f.primary_key) and not isinstance(f, SequenceIdField)
        ]
        columns = ", ".join(_q(f.column) for f in fields)
        values = ", ".join(f"%({f.attname})s" for f in fields)
        sql = f"INSERT INTO {_q(meta.db_table)} ({columns}) VALUES ({values})"  # noqa: S608
        if not with_pk and connection.features.can_return_columns_from_insert:
            sql += f" RETURNING {_q(meta.pk.column)}"
        found = _written[key] = (sql, fields)
    return found


def insert(instance: Model) -> None:
    """``instance.save(force_insert=True)`` without compiling it: every concrete field but an automatic
    primary key (``auto_now_add`` and ``auto_now`` set, as by ``save``), the new key read back."""
    with_pk = instance.pk is not None
    sql, fields = _insert_text(type(instance), with_pk)
    params = db_values(fields, instance, add=True)
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        if not with_pk:
            returned = "RETURNING" in sql
            instance.pk = cursor.fetchone()[0] if returned else cursor.lastrowid
    instance._state.adding = False
    instance._state.db = connection.alias


# -- folded (PostgreSQL): a new call's start, and a result's reads and writes ---------------------------


def _cast(f: Any) -> str:
    # As the decision log's INSERT … SELECT (rules.decisions.statements.LogInsert): nothing else types a
    # parameter there; cast without a length, so that a value too long is refused by the column, not cut.
    return re.sub(r"\(\d+\)$", "", f.db_type(connection))


@built_per_database
def _start_text() -> tuple[str, list[Any], list[Any]]:
    call_fields: list[Any] = [f for f in ToolCall._meta.concrete_fields if not f.primary_key]
    # The sequence ids are the database's to fill (decision_service.sequence).
    attempt_fields: list[Any] = [
        f
        for f in ToolAttempt._meta.concrete_fields
        if not f.primary_key and f.attname != "call_id" and not isinstance(f, SequenceIdField)
    ]
    call, attempt = _q(ToolCall._meta.db_table), _q(ToolAttempt._meta.db_table)
    c = {f.attname: _q(f.column) for f in ToolCall._meta.concrete_fields}
    pk = _q(ToolCall._meta.pk.column)
    sql = (
        f"WITH c AS (INSERT INTO {call} ({', '.join(_q(f.column) for f in call_fields)})"  # noqa: S608
        f" SELECT {', '.join(f'%(c_{f.attname})s::{_cast(f)}' for f in call_fields)}"
        # The state's retry lease, read after the session's lock as before: no other operation starts here
        # while one waits for its retry.
        f" WHERE NOT EXISTS (SELECT 1 FROM {call} l WHERE l.{c['session_id']} = %(c_session_id)s"
        f" AND l.{c['state']} = %(c_state)s AND l.{c['status']} = %(lease_status)s AND l.{c['retry_at']} > %(now)s)"
        # The operation id taken (a repeat, a conflict, or a concurrent check of another session): nothing
        # written, and the caller goes the long way, which reads the call and answers as before.
        f" ON CONFLICT DO NOTHING RETURNING {pk})"
        f" INSERT INTO {attempt} ({_q(ToolAttempt._meta.get_field('call').column)},"
        f" {', '.join(_q(f.column) for f in attempt_fields)})"
        f" SELECT c.{pk}, {', '.join(f'%(a_{f.attname})s::{_cast(f)}' for f in attempt_fields)} FROM c"
        f" RETURNING {_q(ToolAttempt._meta.get_field('call').column)}, {_q(ToolAttempt._meta.pk.column)}"
    )
    return sql, call_fields, attempt_fields


def call_start_new(call: ToolCall, attempt: ToolAttempt, now: dt.datetime) -> bool:
    """PostgreSQL: insert a new ``call`` (as its first attempt leaves it) and its first ``attempt``, in one
    statement, unless the session's state has a retry lease held at ``now`` or the agent has used the
    operation id (then nothing is written: False). The caller holds the session's lock."""
    sql, call_fields, attempt_fields = _start_text()
    params = db_values(call_fields, call, add=True, prefix="c_")
    params.update(db_values(attempt_fields, attempt, add=True, prefix="a_"))  # the call's key is the statement's
    params["lease_status"], params["now"] = ToolCallStatus.RETRY_WAIT.value, now
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    call.pk, attempt.pk = row[0], row[1]
    for saved in (call, attempt):
        # ``django.db.connection`` is the default database's (looked up anew for each attribute).
        saved._state.adding, saved._state.db = False, DEFAULT_DB_ALIAS
    # What ``attempt.call = call`` does, without its checks of the two instances (both just made here).
    attempt.call_id = call.pk
    ToolAttempt.call.field.set_cached_value(attempt, call)
    return True


@built_per_database
def _result_locked_text() -> str:
    call, attempt = _q(ToolCall._meta.db_table), _q(ToolAttempt._meta.db_table)
    session, machine = _q(Session._meta.db_table), _q(StateMachine._meta.db_table)
    c = {f.name: _q(f.column) for f in ToolCall._meta.concrete_fields}
    a = {f.name: _q(f.column) for f in ToolAttempt._meta.concrete_fields}
    s = {f.name: _q(f.column) for f in Session._meta.concrete_fields}
    selected = session_select_list(session=Session, anomaly=Anomaly, with_feedback=True)
    return (
        f"SELECT {', '.join(selected)}, {_select_list(ToolAttempt, 'a')}, {_select_list(ToolCall, 'c')}"  # noqa: S608
        f" FROM {call} c INNER JOIN {attempt} a ON a.{a['call']} = c.{c['id']} AND a.{a['attempt']} = c.{c['attempt']}"
        f" INNER JOIN {session} s ON s.{s['id']} = c.{c['session']}"
        f" INNER JOIN {machine} m ON m.{_q(StateMachine._meta.pk.column)} = s.{s['machine']}"
        f" WHERE c.{c['agent']} = %(agent)s AND c.{c['operation_id']} = %(operation)s"
        # The session first, as every path that moves it locks it first; then the call and its attempt.
        " FOR UPDATE OF s, c, a"
    )


def result_locked(agent_id: int, operation_id: str) -> tuple[Session, FeedbackBasis, ToolAttempt] | None:
    """PostgreSQL: the session of the agent's operation with its feedback, and the operation's current
    attempt with its call (``attempt.call``), all three locked, in one statement; None when there is no such
    operation or it has no attempt yet (the caller then reads them apart)."""
    with prepared_cursor() as cursor:
        cursor.execute(_result_locked_text(), {"agent": agent_id, "operation": operation_id, "limit": FEEDBACK_LIMIT})
        row = cursor.fetchone()
    if row is None:
        return None
    session, rest = session_from_row(row)
    basis = FeedbackBasis.from_columns(rest[0], rest[1], FEEDBACK_LIMIT)
    width = len(ToolAttempt._meta.concrete_fields)
    attempt = _instance(ToolAttempt, rest[2 : 2 + width])
    attempt.call = _instance(ToolCall, rest[2 + width :])
    return session, basis, attempt


_both: dict[tuple[Any, ...], str] = {}


def update_both(
    attempt: ToolAttempt, attempt_fields: Sequence[str], call: ToolCall, call_fields: Sequence[str]
) -> None:
    """``update(attempt, …)`` then ``update(call, …)``: one statement on PostgreSQL (the attempt's UPDATE in a
    writable CTE), two elsewhere."""
    if not folded():
        update(attempt, attempt_fields)
        update(call, call_fields)
        return
    a_sql, a_chosen = _update_text(ToolAttempt, tuple(attempt_fields))
    c_sql, c_chosen = _update_text(ToolCall, tuple(call_fields))
    key = (connection.alias, a_sql, c_sql)
    sql = _both.get(key)
    if sql is None:
        sql = _both[key] = f"WITH a AS ({a_sql.replace('%(', '%(a_')}) {c_sql.replace('%(', '%(c_')}"
    params = db_values(a_chosen, attempt, add=False, prefix="a_")
    params.update(db_values(c_chosen, call, add=False, prefix="c_"))
    params["a_pk"], params["c_pk"] = attempt.pk, call.pk
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)

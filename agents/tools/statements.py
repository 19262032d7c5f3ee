"""The tool-call check's and result's hot statements, written by hand as the decide path's are
(``rules.decisions.statements``).

Why by hand: profiled over many requests (bench/http/profile.py, bench/RESULTS.md "Profile (h25-h)"),
the ORM compiling these few statements on every request cost the server more than anything else in a
check or a result. Names come from the models' metadata; values are named parameters in their database
form (``get_db_prep_save``); rows come back as model instances through each field's ``from_db_value``,
as the ORM's own reads give them. On PostgreSQL they run prepared (``decision_service.db``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

from agents.sessions.models import Session
from agents.tools.models import ToolAttempt, ToolCall
from decision_service.db import built_per_database, prepared_cursor
from decision_service.sequence import SequenceIdField

M = TypeVar("M", bound=Model)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


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
            (col, connection.ops.get_db_converters(col) + f.get_db_converters(connection))
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
    params = {f.attname: f.get_db_prep_save(f.pre_save(instance, False), connection) for f in chosen}
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
    params = {f.attname: f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields}
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        if not with_pk:
            returned = "RETURNING" in sql
            instance.pk = cursor.fetchone()[0] if returned else cursor.lastrowid
    instance._state.adding = False
    instance._state.db = connection.alias

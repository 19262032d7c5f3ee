"""Statements the request path sends on every decide, prepared on the PostgreSQL server.

Django's cursors bind on the client and never prepare, so PostgreSQL plans each of their statements
again on every request. For the few statements a decide sends every time (the session read, the log
insert), planning cost the server about as much as running them (bench/RESULTS.md). These run on a
server-binding psycopg cursor that prepares each one on first use, once per connection (again after a
rollback on it: psycopg forgets its prepared statements then), and once more for each pattern of NULLs
among its parameters (a log row with or without a rule, a candidate, token counts: a handful of forms).

``DATABASE_PREPARED_STATEMENTS=false`` (decision_service/env.py: ``prepare_threshold`` None) turns the
preparing off behind a pooler that cannot carry prepared statements; the cursor still binds on the server.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.numeric import Int8Dumper


class _PreparingCursor(psycopg.Cursor[Any]):
    """Server-side binding, and every statement prepared (psycopg keeps them per connection)."""

    def __init__(self, connection: psycopg.Connection[Any], *, utc: bool) -> None:
        super().__init__(connection)
        # psycopg prepares a statement once per text *and* set of parameter types, and types a Python int
        # as int2, int4 or int8 by its size: one type for every int keeps a statement to one prepared form
        # for each pattern of NULLs in its parameters, instead of one more for every size of a number.
        self.adapters.register_dumper(int, Int8Dumper)
        if utc:
            # Django reads a time with psycopg's loader in Python, then gives it Django's time zone; when
            # both the connection's and Django's are UTC, psycopg's own loader (in C, a twentieth of the
            # time) makes the same aware datetime, in ``datetime.timezone.utc``.
            self.adapters.register_loader("timestamptz", TimestamptzLoader)

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


# Each connection keeps one cursor for each hot statement it has run, on the connection object itself
# (so a new connection starts afresh, and the cursors go with theirs). psycopg sets up a cursor's adapters,
# and for each new statement text the loaders of its columns (a JSON and a time zone loader among them);
# a cursor that runs the very same statement again keeps them (psycopg's ``_last_query``). That setting
# up was about a twentieth of a tool-call check's server time (bench/RESULTS.md, "Kept cursors").
_KEPT = "_arbiter_kept_cursors"
_KEPT_MAX = 64  # statements a connection keeps a cursor for; the hot paths send about twenty


def _kept_cursor(db: Any, sql: Any) -> tuple[_PreparingCursor, bool]:
    """The connection's cursor for ``sql``, and whether it is kept (past ``_KEPT_MAX`` statements, a
    cursor is made for this run only, and closed after it)."""
    raw = db.connection
    kept: dict[Any, _PreparingCursor] | None = getattr(raw, _KEPT, None)
    if kept is None:
        kept = {}
        setattr(raw, _KEPT, kept)
    cursor = kept.get(sql)
    if cursor is not None and not cursor.closed:
        return cursor, True
    with db.wrap_database_errors:
        utc = db.timezone is dt.UTC and raw.pgconn.parameter_status(b"TimeZone") == b"UTC"
        cursor = _PreparingCursor(raw, utc=utc)
    if len(kept) < _KEPT_MAX or sql in kept:
        kept[sql] = cursor
        return cursor, True
    return cursor, False


class _KeptCursorWrapper(CursorWrapper):
    """Django's wrapper (its error translation) over the connection's kept cursor for the statement it
    executes; closing it leaves that cursor open for the statement's next run."""

    def __init__(self, db: Any) -> None:
        super().__init__(None, db)
        self._transient = False

    def _use(self, sql: Any) -> None:
        self.close()
        self.cursor, kept = _kept_cursor(self.db, sql)
        self._transient = not kept

    def execute(self, sql: Any, params: Any = None) -> Any:
        self._use(sql)
        return super().execute(sql, params)

    def close(self) -> None:
        if self._transient:
            self.cursor.close()
        self.cursor, self._transient = None, False


class _KeptDebugWrapper(_KeptCursorWrapper, CursorDebugWrapper):
    """The query log (``DEBUG``, ``CaptureQueriesContext``) shows a prepared statement as written: the
    backend's "last executed query" reads what psycopg sent, which for a prepared statement is its name."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        self._use(sql)
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


def prepared_cursor() -> Any:
    """A cursor for a hot statement: on PostgreSQL one that prepares it on the server; elsewhere Django's.

    Wrapped as Django wraps its cursors: the same error translation and query log. Parameters are
    written ``%s`` as for any Django cursor; on the server they are typed from where they are used, so a
    parameter whose use does not fix its type needs a cast in the statement. One ``execute`` a cursor
    (then its ``fetch…``): each statement runs on the connection's kept cursor for it.
    """
    # The connection itself, looked up once: ``django.db.connection`` looks it up again for every attribute.
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql":
        return db.cursor()
    # What connection.cursor() does before it makes a cursor: such a statement is often a request's first,
    # and the health check is what makes a restarted database server invisible (decision_service/env.py).
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    return _KeptDebugWrapper(db) if db.queries_logged else _KeptCursorWrapper(db)


T = TypeVar("T")


def built_per_database(build: Callable[[], T]) -> Callable[[], T]:
    """``build``'s result, made once for each database alias (on first use with that alias) and kept: for a
    statement written from the models' metadata, which depends only on the models and the backend."""
    built: dict[str, T] = {}

    def get() -> T:
        found = built.get(connection.alias)
        if found is None:
            found = built[connection.alias] = build()
        return found

    return get


# Field classes whose database form (``get_db_prep_save``) of a value of this Python type is the value
# itself on every backend Arbiter runs on, and whose ``pre_save`` only reads the attribute. Exact classes:
# a subclass (SequenceIdField, say) may change either. A foreign key whose target is a number is one too;
# on PostgreSQL so is an aware datetime in a date-time field that sets no value itself (``_plan``).
_UNCHANGED: dict[type[Any], type[Any]] = {
    models.CharField: str,
    models.TextField: str,
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.SmallIntegerField: int,
    models.BooleanField: bool,
}
_NUMBER_KEYS = (models.AutoField, models.BigAutoField, models.IntegerField, models.BigIntegerField)
_Plan = tuple[tuple[str, Any, "type[Any] | None", bool], ...]
# Keyed by the id of the fields' list, which the plan holds (so the id cannot be reused while it is kept):
# the callers pass the lists they built once per statement.
_plans: dict[tuple[int, str, str], tuple[Any, _Plan]] = {}


def _plan(fields: Any, prefix: str, vendor: str) -> _Plan:
    """For each field: (parameter name, field, the type whose values it sends unchanged or None, whether
    it sends None unchanged)."""
    plan = []
    for f in fields:
        kind = type(f)
        passes: type[Any] | None = _UNCHANGED.get(kind)
        if kind is models.ForeignKey and type(f.target_field) in _NUMBER_KEYS:
            passes = int
        elif kind is models.DateTimeField and vendor == "postgresql" and not (f.auto_now or f.auto_now_add):
            passes = dt.datetime  # and aware: a naive one is made aware (with a warning) the ORM's way
        # A BooleanField that is not null refuses None: the ORM's way says so.
        plan.append((prefix + f.attname, f, passes, passes is not None and (kind is not models.BooleanField or f.null)))
    return tuple(plan)


def db_values(fields: Any, instance: Any, *, add: bool, prefix: str = "") -> dict[str, Any]:
    """``{prefix + attname: f.get_db_prep_save(f.pre_save(instance, add), connection)}`` for ``fields``, as
    the ORM would send them. Most of a row's values are strings, numbers, keys and times sent as they are:
    those are read off the instance (the ORM's way, each value's round of conversions cost a tool-call
    check about a twentieth of its server time: bench/RESULTS.md, "The check's last cuts"); every other
    value goes the ORM's way. tests/test_db.py checks that both ways agree, field by field."""
    db = connections[DEFAULT_DB_ALIAS]
    key = (id(fields), prefix, db.vendor)
    found = _plans.get(key)
    if found is None or found[0] is not fields:
        found = _plans[key] = (fields, _plan(fields, prefix, db.vendor))
    values: dict[str, Any] = {}
    attributes = instance.__dict__
    for name, f, passes, none_passes in found[1]:
        if passes is not None:
            value: Any = attributes.get(f.attname, _MISSING)
            if value is None:
                if none_passes:
                    values[name] = None
                    continue
            else:
                fits = type(value) is passes or (passes is str and isinstance(value, str))
                # A naive time is made aware (with a warning) the ORM's way.
                if fits and (passes is not dt.datetime or value.utcoffset() is not None):
                    values[name] = value
                    continue
        values[name] = f.get_db_prep_save(f.pre_save(instance, add), db)
    return values


_MISSING = object()


_instance_plans: dict[type[Any], tuple[tuple[str, Callable[[], Any]], ...]] = {}


def new_instance(model: type[T], **values: Any) -> T:
    """``model(**values)`` for a hot path, with ``values`` named by attribute (``session_id``, not
    ``session``): the same instance, made the way the ORM makes one from a row (every concrete field in
    order, the defaults filled in here), which skips the keyword path's work for each field. Django's own
    keyword path was about a twentieth of a tool-call check's server time (bench/RESULTS.md, "Kept cursors").
    tests/test_db.py checks both ways make the same instance."""
    plan = _instance_plans.get(model)
    if plan is None:
        plan = _instance_plans[model] = tuple((f.attname, f.get_default) for f in model._meta.concrete_fields)  # type: ignore[attr-defined]
    args = [values.pop(name) if name in values else default() for name, default in plan]
    if values:
        raise TypeError(f"{model.__name__} has no concrete fields {', '.join(sorted(values))}")
    return model(*args)


_raw_decode = json.JSONDecoder().raw_decode  # what json.loads uses, without its checks around it


def quick_converters(converters: list[Any]) -> list[Any]:
    """A column's converters as the ORM lists them, with a plain ``JSONField``'s (no decoder of its own)
    wrapped by ``_quick_json``: the same values, with less work around the decoding itself."""
    return [_quick_json(convert) if _plain_json(convert) else convert for convert in converters]


def _plain_json(convert: Any) -> bool:
    field = getattr(convert, "__self__", None)
    return (
        type(field) is models.JSONField
        and field.decoder is None
        and getattr(convert, "__func__", None) is models.JSONField.from_db_value
    )


def _quick_json(from_db_value: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """``from_db_value``, a plain ``JSONField``'s: a string that is one JSON text from its first character
    to its last (the form PostgreSQL and SQLite write) is decoded here, as ``json.loads`` would decode it;
    anything else goes Django's way. tests/test_db_kept.py checks both ways agree."""

    def convert(value: Any, expression: Any, connection: Any) -> Any:
        if type(value) is str:
            try:
                decoded, end = _raw_decode(value)
            except ValueError:
                pass
            else:
                if end == len(value):
                    return decoded
        return from_db_value(value, expression, connection)

    return convert

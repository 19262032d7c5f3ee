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

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from psycopg.types.numeric import Int8Dumper


class _PreparingCursor(psycopg.Cursor[Any]):
    """Server-side binding, and every statement prepared (psycopg keeps them per connection)."""

    def __init__(self, connection: psycopg.Connection[Any], **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        # psycopg prepares a statement once per text *and* set of parameter types, and types a Python int
        # as int2, int4 or int8 by its size: one type for every int keeps a statement to one prepared form
        # for each pattern of NULLs in its parameters, instead of one more for every size of a number.
        self.adapters.register_dumper(int, Int8Dumper)

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


class _PreparedDebugWrapper(CursorDebugWrapper):
    """The query log (``DEBUG``, ``CaptureQueriesContext``) shows a prepared statement as written: the
    backend's "last executed query" reads what psycopg sent, which for a prepared statement is its name."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


def prepared_cursor() -> Any:
    """A cursor for a hot statement: on PostgreSQL one that prepares it on the server; elsewhere Django's.

    Wrapped as Django wraps its cursors: the same error translation and query log. Parameters are
    written ``%s`` as for any Django cursor; on the server they are typed from where they are used, so a
    parameter whose use does not fix its type needs a cast in the statement.
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
    with db.wrap_database_errors:
        cursor = _PreparingCursor(db.connection)
    return _PreparedDebugWrapper(cursor, db) if db.queries_logged else CursorWrapper(cursor, db)


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

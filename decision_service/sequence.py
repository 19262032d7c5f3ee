"""One order for everything Arbiter records: the service-wide event sequence.

Every event row (a move, a decision, an anomaly, a queue event, a tool-call attempt and its result, a
runtime-reported trace event) carries a ``sequence_id`` taken from one source when the row is written, so
a session's story reads in one order across its tables and a runtime can ask for what came after the
last number it saw. A per-process counter could not do that with several workers; the database does.

- PostgreSQL: one ``SEQUENCE``; the column's ``DEFAULT nextval(…)`` fills it on every insert, from the
  ORM and from the hand-written statements alike (they leave the column out), in the statement that
  writes the row: no extra round trip.
- SQLite: no sequences, so a one-row counter table and a trigger per column. SQLite runs one writer at a
  time, so the numbers follow commit order.

A column stamped when a row *changes* (a tool-call attempt's result: ``SequenceIdField(stamp_on="…")``)
is set by a trigger on both databases when that other column goes from NULL to a value.

The triggers are (re)installed after every ``migrate`` (``ensure_event_sequence``), because SQLite's
schema editor rebuilds a table for many alterations and a rebuilt table has lost its triggers.

Numbers are handed out when a row is written and become visible when its transaction commits; two
transactions may commit out of order. Within one session that cannot happen for the events that take the
session's row lock before they are written, which is every write that changes a session.
"""

from __future__ import annotations

from typing import Any, cast

from django.apps import apps
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.deconstruct import deconstructible
from django.utils.translation import gettext_lazy as _

SEQUENCE = "arbiter_event_sequence"
COUNTER_TABLE = "arbiter_event_sequence"  # SQLite's stand-in: one row, the last number handed out


@deconstructible(path="decision_service.sequence.NextSequenceId")
class NextSequenceId(models.Expression):
    """The column default: the sequence's next value on PostgreSQL; NULL on SQLite, where the insert
    trigger sets it."""

    # Django's database check (fields.E012, run by migrate, not by the tests) refuses an expression in a
    # db_default unless it says it may be one; this one reads no column.
    allowed_default = True

    def __init__(self) -> None:
        super().__init__(output_field=models.BigIntegerField())

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        if connection.vendor == "postgresql":
            return f"nextval('{SEQUENCE}')", []
        return "NULL", []


class SequenceIdField(models.BigIntegerField):
    """A place in the service-wide event order. Without ``stamp_on``: set when the row is inserted.
    With ``stamp_on="col"``: set when ``col`` goes from NULL to a value (NULL until then)."""

    def __init__(self, *args: Any, stamp_on: str | None = None, **kwargs: Any) -> None:
        self.stamp_on = stamp_on
        kwargs.setdefault("editable", False)
        kwargs.setdefault("verbose_name", _("sequence id"))
        kwargs.setdefault("help_text", _("Its place in the order of everything the service records."))
        kwargs.setdefault("null", True)
        if stamp_on is None:
            kwargs.setdefault("db_default", NextSequenceId())
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.stamp_on is not None:
            kwargs["stamp_on"] = self.stamp_on
        kwargs.pop("editable", None)
        if kwargs.get("null") is True:
            kwargs.pop("null")
        return name, path, args, kwargs


def sequenced_columns() -> list[tuple[str, str, str | None]]:
    """``(table, column, stamp_on column)`` of every ``SequenceIdField`` installed."""
    found = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, SequenceIdField):
                stamp = cast(models.Field, model._meta.get_field(field.stamp_on)).column if field.stamp_on else None
                found.append((model._meta.db_table, field.column, stamp))
    return found


def _sqlite_statements(table: str, column: str, stamp_on: str | None) -> list[str]:
    name = f"{table}_{column}_seq"
    take = f"UPDATE {COUNTER_TABLE} SET value = value + 1;"
    mine = f"(SELECT value FROM {COUNTER_TABLE})"
    if stamp_on is None:
        return [
            f'CREATE TRIGGER IF NOT EXISTS "{name}" AFTER INSERT ON "{table}" '
            f'WHEN NEW."{column}" IS NULL BEGIN {take} '
            f'UPDATE "{table}" SET "{column}" = {mine} WHERE rowid = NEW.rowid; END'
        ]
    return [
        f'CREATE TRIGGER IF NOT EXISTS "{name}" AFTER UPDATE OF "{stamp_on}" ON "{table}" '
        f'WHEN OLD."{stamp_on}" IS NULL AND NEW."{stamp_on}" IS NOT NULL AND NEW."{column}" IS NULL '
        f'BEGIN {take} UPDATE "{table}" SET "{column}" = {mine} WHERE rowid = NEW.rowid; END'
    ]


def _postgresql_statements(table: str, column: str, stamp_on: str | None) -> list[str]:
    if stamp_on is None:
        return []  # the column default does it
    name = f"{table}_{column}_seq"
    return [
        f"""CREATE OR REPLACE FUNCTION "{name}"() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD."{stamp_on}" IS NULL AND NEW."{stamp_on}" IS NOT NULL AND NEW."{column}" IS NULL THEN
                NEW."{column}" := nextval('{SEQUENCE}');
            END IF;
            RETURN NEW;
        END $$""",
        f'DROP TRIGGER IF EXISTS "{name}" ON "{table}"',
        f'CREATE TRIGGER "{name}" BEFORE UPDATE OF "{stamp_on}" ON "{table}" FOR EACH ROW EXECUTE FUNCTION "{name}"()',
    ]


def sequence_create(connection: BaseDatabaseWrapper) -> None:
    """The sequence (PostgreSQL) or its counter row (SQLite); a no-op when it exists."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}")
        else:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {COUNTER_TABLE} "
                "(id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)"
            )
            cursor.execute(f"INSERT OR IGNORE INTO {COUNTER_TABLE} (id, value) VALUES (1, 0)")


def sequence_install(connection: BaseDatabaseWrapper, columns: list[tuple[str, str, str | None]] | None = None) -> None:
    """The sequence and the triggers of ``columns`` (default: every ``SequenceIdField`` installed)."""
    sequence_create(connection)
    statements = _postgresql_statements if connection.vendor == "postgresql" else _sqlite_statements
    with connection.cursor() as cursor:
        for table, column, stamp_on in columns if columns is not None else sequenced_columns():
            for sql in statements(table, column, stamp_on):
                cursor.execute(sql)


def sequence_uninstall(connection: BaseDatabaseWrapper, columns: list[tuple[str, str, str | None]]) -> None:
    """The triggers of ``columns`` dropped (a migration removing them: SQLite refuses to drop a column that
    a trigger names)."""
    with connection.cursor() as cursor:
        for table, column, stamp_on in columns:
            name = f"{table}_{column}_seq"
            if connection.vendor == "postgresql":
                if stamp_on is not None:
                    cursor.execute(f'DROP TRIGGER IF EXISTS "{name}" ON "{table}"')
                    cursor.execute(f'DROP FUNCTION IF EXISTS "{name}"()')
            else:
                cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')


def sequence_backfill(
    connection: BaseDatabaseWrapper, table: str, column: str, order_by: str, *, where: str = ""
) -> None:
    """Number a table's existing rows (those matching ``where``) in ``order_by`` order, after every number
    handed out so far: a migration adding the column. On PostgreSQL adding a column whose default is the
    sequence numbered the rows in whatever order they lay on disk, so they are numbered again, in order."""
    condition = where or "TRUE"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f'UPDATE "{table}" SET "{column}" = numbered.n FROM '
                f"(SELECT ordered.id, nextval('{SEQUENCE}') AS n "
                f'FROM (SELECT id FROM "{table}" WHERE {condition} ORDER BY {order_by}) ordered) numbered '
                f'WHERE "{table}".id = numbered.id'
            )
            return
        cursor.execute(f"SELECT value FROM {COUNTER_TABLE}")
        (base,) = cursor.fetchone()
        cursor.execute(
            f'WITH numbered AS (SELECT rowid AS r, ROW_NUMBER() OVER (ORDER BY {order_by}) AS n FROM "{table}" '
            f'WHERE {condition}) UPDATE "{table}" SET "{column}" = %s + numbered.n FROM numbered '
            f'WHERE "{table}".rowid = numbered.r',
            [base],
        )
        cursor.execute(
            f'UPDATE {COUNTER_TABLE} SET value = MAX(value, COALESCE((SELECT MAX("{column}") FROM "{table}"), 0))'
        )


def ensure_event_sequence(using: str = "default", **_: Any) -> None:
    """After ``migrate``: the sequence and every trigger in place (SQLite's table rebuilds drop triggers).
    Columns a partial or backward ``migrate`` left out of the database are passed over."""
    from django.db import connections

    connection = connections[using]
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
        present = []
        for table, column, stamp_on in sequenced_columns():
            if table in tables:
                names = {c.name for c in connection.introspection.get_table_description(cursor, table)}
                if column in names and (stamp_on is None or stamp_on in names):
                    present.append((table, column, stamp_on))
    if present:
        sequence_install(connection, present)

"""The decision log's monthly partitions on PostgreSQL: created ahead, split out of DEFAULT, dropped whole.

Migration 0015 makes ``rules_decisionrecord`` a table partitioned by range of ``created_at``:

- one partition per calendar month (UTC), named ``rules_decisionrecord_pYYYY_MM`` and holding
  ``[first of the month, first of the next month)``;
- a DEFAULT partition, ``rules_decisionrecord_default``, for a row whose month has no partition yet, so
  an insert never fails for want of one.

``decision_log_partitions_ensure`` (Celery beat, daily) creates the current month and the next
``MONTHS_AHEAD`` months, and moves any rows that landed in DEFAULT into their month's own partition.
``decision_log_partitions_drop`` (the retention sweep) drops a month once all of it is older than the
cutoff: a whole table goes, no row is deleted, nothing is left for VACUUM. Rows in other tables that
point at the month's decisions (anomalies, transitions, idempotency keys) are handled first as their
``on_delete`` says, since the database holds no foreign keys to a partitioned log.

On SQLite (and on a PostgreSQL log that is not partitioned) these functions do nothing; retention
deletes rows in batches there (``rules.decisions.retention``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass

from django.db import connection, models, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from rules.models import DecisionRecord

logger = logging.getLogger(__name__)

TABLE = "rules_decisionrecord"
DEFAULT_PARTITION = f"{TABLE}_default"
# The current month and the next two always have their partition: the daily task can miss two months of
# runs before an insert lands in DEFAULT (where it still succeeds, and is moved out on the next run).
MONTHS_AHEAD = 2
NAME = re.compile(rf"^{TABLE}_p(\d{{4}})_(\d{{2}})$")
# pg_advisory_xact_lock key serialising partition maintenance between workers ("arbiter partitions").
LOCK_KEY = 0x4152_4250
# DDL on the log waits at most this long for a lock, rather than queueing every insert behind it;
# the task fails and the next run tries again.
LOCK_TIMEOUT = "10s"


@dataclass(frozen=True)
class Partition:
    name: str
    start: dt.datetime
    end: dt.datetime


def month_start(moment: dt.datetime | dt.date) -> dt.datetime:
    """The first instant (UTC) of the month ``moment`` falls in."""
    if isinstance(moment, dt.datetime):
        moment = moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    return dt.datetime(moment.year, moment.month, 1, tzinfo=dt.UTC)


def next_month(start: dt.datetime) -> dt.datetime:
    return dt.datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=dt.UTC)


def partition_name(start: dt.datetime) -> str:
    return f"{TABLE}_p{start:%Y_%m}"


def _partition(name: str) -> Partition | None:
    match = NAME.match(name)
    if match is None:
        return None
    start = dt.datetime(int(match[1]), int(match[2]), 1, tzinfo=dt.UTC)
    return Partition(name=name, start=start, end=next_month(start))


def _literal(moment: dt.datetime) -> str:
    # A partition bound cannot be a query parameter; this one is built from integers only.
    return f"'{moment:%Y-%m-%d %H:%M:%S}+00'"


def decision_log_partitioned() -> bool:
    """Whether the log is a partitioned table here (PostgreSQL after migration 0015)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relkind FROM pg_class c WHERE c.relname = %s AND pg_table_is_visible(c.oid)", [TABLE])
        row = cursor.fetchone()
    return row is not None and row[0] == "p"


def decision_log_partitions() -> list[Partition]:
    """The monthly partitions attached to the log, oldest first (DEFAULT not included)."""
    if not decision_log_partitioned():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [TABLE],
        )
        names = [name for (name,) in cursor.fetchall()]
    return sorted((p for n in names if (p := _partition(n)) is not None), key=lambda p: p.start)


def _months_in_default() -> set[dt.datetime]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC') FROM \"{DEFAULT_PARTITION}\""  # noqa: S608
        )
        return {month_start(m) for (m,) in cursor.fetchall()}


def _create(start: dt.datetime) -> bool:
    """Create (and attach) one month's partition, moving its rows out of DEFAULT; False if it exists."""
    name, end = partition_name(start), next_month(start)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        if any(p.name == name for p in decision_log_partitions()):
            return False
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        # Inserts of this month wait while their rows move: otherwise one could land in DEFAULT between
        # the move and the ATTACH, and the ATTACH would fail. Inserts of other months go on.
        cursor.execute(f'LOCK TABLE "{DEFAULT_PARTITION}" IN EXCLUSIVE MODE')
        cursor.execute(f'CREATE TABLE "{name}" (LIKE "{TABLE}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
        bounds = f"created_at >= {_literal(start)} AND created_at < {_literal(end)}"
        cursor.execute(
            f'WITH moved AS (DELETE FROM "{DEFAULT_PARTITION}" WHERE {bounds} RETURNING *) '  # noqa: S608
            f'INSERT INTO "{name}" SELECT * FROM moved'
        )
        moved = cursor.rowcount
        # ATTACH builds the partition's share of every index of the log (the primary key included).
        cursor.execute(
            f'ALTER TABLE "{TABLE}" ATTACH PARTITION "{name}" FOR VALUES FROM ({_literal(start)}) TO ({_literal(end)})'
        )
    logger.info("decision log: created partition %s (%d rows moved out of DEFAULT)", name, moved)
    return True


def decision_log_partitions_ensure(*, now: dt.datetime | None = None) -> list[str]:
    """Create the partitions of this month and the next ``MONTHS_AHEAD``, and of every month with rows in
    DEFAULT (moving them there). Returns the names created; safe to run again or from two workers."""
    if not decision_log_partitioned():
        return []
    current = month_start(now or timezone.now())
    wanted = {current}
    for _ in range(MONTHS_AHEAD):
        wanted.add(next_month(max(wanted)))
    wanted |= _months_in_default()
    existing = {p.start for p in decision_log_partitions()}
    return [partition_name(m) for m in sorted(wanted - existing) if _create(m)]


def _release_links(ids: models.QuerySet | RawSQL, batch_size: int) -> None:
    """Do for the rows pointing at the decisions ``ids`` what their ``on_delete`` says, in batches."""
    for relation in DecisionRecord._meta.related_objects:
        field = relation.field
        model = relation.related_model
        assert isinstance(model, type)  # a model class, not "self": the log has no relation to itself
        related = model._base_manager
        pks = list(related.filter(**{f"{field.attname}__in": ids}).values_list("pk", flat=True))
        for i in range(0, len(pks), batch_size):
            chunk = related.filter(pk__in=pks[i : i + batch_size])
            with transaction.atomic():
                if relation.on_delete is models.SET_NULL:
                    chunk.update(**{field.attname: None})
                elif relation.on_delete is models.CASCADE:
                    chunk.delete()
                else:
                    raise RuntimeError(
                        f"{model.__name__}.{field.name} has on_delete={relation.on_delete.__name__}; "
                        "dropping a month of the decision log knows SET_NULL and CASCADE only."
                    )


def _detached() -> list[Partition]:
    """Monthly tables left detached by a sweep that stopped before dropping them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid) "
            "AND c.relname LIKE %s AND NOT c.relispartition",
            [f"{TABLE}\\_p%"],
        )
        names = [name for (name,) in cursor.fetchall()]
    return [p for n in names if (p := _partition(n)) is not None]


def decision_log_partitions_drop(*, cutoff: dt.datetime, batch_size: int) -> int:
    """Drop every month of the log that ended at or before ``cutoff``; returns how many decisions went.

    For each month: the links to its decisions are released (while it is still attached, so no page
    meets a dangling one), it is detached (a brief lock on the log), the links made in the meantime are
    released too, and the table is dropped.
    """
    dropped = 0
    for part in decision_log_partitions():
        if part.end > cutoff:
            continue
        _release_links(
            DecisionRecord.objects.filter(created_at__gte=part.start, created_at__lt=part.end).values("pk"), batch_size
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cursor.execute(f'ALTER TABLE "{TABLE}" DETACH PARTITION "{part.name}"')
    for part in _detached():
        if part.end > cutoff:
            continue
        # The name matched NAME (digits only besides the table's): no injection through it.
        _release_links(RawSQL(f'SELECT id FROM "{part.name}"', []), batch_size)  # noqa: S608, S611
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f'SELECT count(*) FROM "{part.name}"')  # noqa: S608
            rows = cursor.fetchone()[0]
            cursor.execute(f'DROP TABLE "{part.name}"')
        dropped += rows
        logger.info("decision log: dropped partition %s (%d decisions)", part.name, rows)
    return dropped

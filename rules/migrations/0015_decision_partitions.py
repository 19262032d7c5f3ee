"""The decision log, partitioned by month on PostgreSQL; Idempotency-Keys in a table of their own.

Everywhere: the (agent, Idempotency-Key) uniqueness moves from a partial unique index on the log to
``rules_decisionidempotencykey``, filled from the log's keyed rows.

On PostgreSQL only: ``rules_decisionrecord`` is rebuilt as a table partitioned by range of
``created_at``, with its rows: the old table is renamed, its indexes and primary key dropped, the new
table created like it (``PARTITION BY RANGE (created_at)``, primary key ``(id, created_at)``) with a
DEFAULT partition and one partition per month that has rows plus this month and the next two
(``rules_decisionrecord_pYYYY_MM``, as ``rules.decisions.partitions`` names them), the rows copied, the
old indexes re-created on the new table under their names, and the old table dropped. The ids are UUIDs,
so there is no sequence to carry over. The copy takes time in proportion to the log and holds the table
for it: plan the upgrade of a large log. Reversible: backwards, the log is rebuilt as a plain table the
same way and the unique index comes back. Foreign keys to the log must be gone first (agents 0011).
"""

import datetime as dt

import django.db.models.deletion
from django.db import migrations, models

TABLE = "rules_decisionrecord"
MONTHS_AHEAD = 2  # as rules.decisions.partitions; frozen here so later code changes do not alter history


def _month(moment):
    return dt.datetime(moment.year, moment.month, 1, tzinfo=dt.UTC)


def _next(start):
    return dt.datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=dt.UTC)


def _literal(moment):
    return f"'{moment:%Y-%m-%d %H:%M:%S}+00'"


def _rebuild(schema_editor, *, partitioned):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return  # SQLite: the log stays one table; retention deletes rows in batches
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s AND pg_table_is_visible(oid)", [TABLE])
        if (cursor.fetchone()[0] == "p") == partitioned:
            return
        cursor.execute(
            "SELECT conname, conrelid::regclass::text FROM pg_constraint WHERE contype = 'f' AND confrelid = %s::regclass",
            [TABLE],
        )
        if references := cursor.fetchall():
            raise RuntimeError(f"Foreign keys still reference {TABLE}: {references}; migrate agents first.")
        cursor.execute("SELECT conname FROM pg_constraint WHERE contype = 'p' AND conrelid = %s::regclass", [TABLE])
        primary_key = cursor.fetchone()[0]
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND schemaname = current_schema() "
            "AND indexname <> %s ORDER BY indexname",
            [TABLE, primary_key],
        )
        indexes = cursor.fetchall()
        old = f"{TABLE}_old"
        cursor.execute(f'ALTER TABLE "{TABLE}" RENAME TO "{old}"')
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(f'ALTER TABLE "{old}" DROP CONSTRAINT "{primary_key}"')
        by = " PARTITION BY RANGE (created_at)" if partitioned else ""
        cursor.execute(f'CREATE TABLE "{TABLE}" (LIKE "{old}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS){by}')
        key = "id, created_at" if partitioned else "id"
        cursor.execute(f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "{TABLE}_pkey" PRIMARY KEY ({key})')
        if partitioned:
            cursor.execute(f'CREATE TABLE "{TABLE}_default" PARTITION OF "{TABLE}" DEFAULT')
            cursor.execute(f"SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC') FROM \"{old}\"")
            months = {_month(m) for (m,) in cursor.fetchall()}
            ahead = _month(dt.datetime.now(dt.UTC))
            for _ in range(MONTHS_AHEAD + 1):
                months.add(ahead)
                ahead = _next(ahead)
            for start in sorted(months):
                cursor.execute(
                    f'CREATE TABLE "{TABLE}_p{start:%Y_%m}" PARTITION OF "{TABLE}" '
                    f"FOR VALUES FROM ({_literal(start)}) TO ({_literal(_next(start))})"
                )
        cursor.execute(f'INSERT INTO "{TABLE}" SELECT * FROM "{old}"')  # noqa: S608
        for _, definition in indexes:
            # A partitioned table's index reads "ON ONLY"; re-created here it spans the partitions.
            cursor.execute(definition.replace(" ON ONLY ", " ON "))
        cursor.execute(f'DROP TABLE "{old}"')
        cursor.execute(f'ANALYZE "{TABLE}"')


def partition(apps, schema_editor):
    _rebuild(schema_editor, partitioned=True)


def unpartition(apps, schema_editor):
    _rebuild(schema_editor, partitioned=False)


class Migration(migrations.Migration):
    dependencies = [
        ("rules", "0014_fact_masking"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="decisionrecord",
            name="decision_idempotency_key_unique_per_agent",
        ),
        migrations.CreateModel(
            name="DecisionIdempotencyKey",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("agent_id", models.BigIntegerField(help_text="The agent runtime's id.")),
                ("key", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(db_index=True)),
                (
                    "decision",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="idempotency",
                        to="rules.decisionrecord",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("agent_id", "key"), name="decision_idempotency_key_unique_per_agent")
                ],
            },
        ),
        migrations.RunSQL(
            "INSERT INTO rules_decisionidempotencykey (agent_id, key, decision_id, created_at) "
            "SELECT agent_id, idempotency_key, id, created_at FROM rules_decisionrecord "
            "WHERE idempotency_key <> '' AND agent_id IS NOT NULL",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RunPython(partition, unpartition),
    ]

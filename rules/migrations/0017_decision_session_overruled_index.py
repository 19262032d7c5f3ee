"""A partial index for a session's latest overruled decisions (the decide path's feedback hints).

On PostgreSQL the log is partitioned, and a plain ``CREATE INDEX`` on the parent blocks every insert
into every partition until the whole index is built: on a large log, every decide would wait. So each
partition's index is built ``CONCURRENTLY`` (inserts go on), then the parent's index is created on the
parent only and the partitions' indexes attached to it, which takes no time. Not atomic, as
``CONCURRENTLY`` needs; ``IF NOT EXISTS`` lets a run that stopped half-way be run again. SQLite (and an
unpartitioned log) get the index the plain way.
"""

from django.db import migrations, models

TABLE = "rules_decisionrecord"
NAME = "decision_session_overruled_idx"
INDEX = models.Index(
    condition=models.Q(("overridden", True), ("ruled_by", "hard_rule")),
    fields=["session_id", "-created_at"],
    name=NAME,
)
# The same index as INDEX, in PostgreSQL's words (names and values from this file only).
DEFINITION = "(session_id, created_at DESC) WHERE overridden AND ruled_by = 'hard_rule'"


def _partitions(cursor):
    cursor.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [TABLE])
    if cursor.fetchone()[0] != "p":
        return None
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass",
        [TABLE],
    )
    return [row[0] for row in cursor.fetchall()]


def forwards(apps, schema_editor):
    model = apps.get_model("rules", "DecisionRecord")
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        schema_editor.add_index(model, INDEX)
        return
    with connection.cursor() as cursor:
        partitions = _partitions(cursor)
        if partitions is None:
            cursor.execute(f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{NAME}" ON "{TABLE}" {DEFINITION}')
            return
        for partition in partitions:
            cursor.execute(
                f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{partition}_overruled" ON "{partition}" {DEFINITION}'
            )
        cursor.execute(f'CREATE INDEX IF NOT EXISTS "{NAME}" ON ONLY "{TABLE}" {DEFINITION}')
        for partition in partitions:
            cursor.execute(f'ALTER INDEX "{NAME}" ATTACH PARTITION "{partition}_overruled"')


def backwards(apps, schema_editor):
    model = apps.get_model("rules", "DecisionRecord")
    schema_editor.remove_index(model, INDEX)  # on PostgreSQL the partitions' indexes go with the parent's


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("rules", "0016_i18n_labels"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="decisionrecord", index=INDEX)],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]

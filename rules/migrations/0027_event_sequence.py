"""The service-wide event sequence (decision_service.sequence) and the decision log's place in it.

The sequence is made before the column whose default draws on it. Existing rows are then numbered in time
order (on PostgreSQL again: adding the column numbered them in the order they lay on disk).
"""

import decision_service.sequence
from django.db import migrations, models


def sequence_create(apps, schema_editor):
    decision_service.sequence.sequence_create(schema_editor.connection)


def number_and_trigger(apps, schema_editor):
    connection = schema_editor.connection
    decision_service.sequence.sequence_backfill(connection, "rules_decisionrecord", "sequence_id", "created_at, id")
    decision_service.sequence.sequence_install(connection, [("rules_decisionrecord", "sequence_id", None)])


def drop_trigger(apps, schema_editor):
    decision_service.sequence.sequence_uninstall(
        schema_editor.connection, [("rules_decisionrecord", "sequence_id", None)]
    )


class Migration(migrations.Migration):
    dependencies = [
        ("rules", "0026_tool_contract_permissions"),
    ]

    operations = [
        migrations.RunPython(sequence_create, migrations.RunPython.noop, elidable=False),
        migrations.RemoveIndex(
            model_name="decisionrecord",
            name="decision_session_idx",
        ),
        migrations.AddField(
            model_name="decisionrecord",
            name="sequence_id",
            field=decision_service.sequence.SequenceIdField(
                db_default=decision_service.sequence.NextSequenceId(),
                help_text="Its place in the order of everything the service records.",
                verbose_name="sequence id",
            ),
        ),
        migrations.AddIndex(
            model_name="decisionrecord",
            index=models.Index(fields=["session_id", "sequence_id"], name="decision_session_seq_idx"),
        ),
        migrations.RunPython(number_and_trigger, drop_trigger, elidable=False),
    ]

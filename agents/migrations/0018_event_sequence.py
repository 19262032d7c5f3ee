"""Moves, anomalies, queue events and tool-call attempts (and their results) in the service-wide event
order (decision_service.sequence). Existing rows are numbered one table after another, each in time order;
an attempt that has its result gets a number for it after every start.
"""

import decision_service.sequence
from django.db import migrations, models


COLUMNS = [
    ("agents_transition", "sequence_id", None, "session_id, seq"),
    ("agents_anomaly", "sequence_id", None, "created_at, id"),
    ("agents_queueevent", "sequence_id", None, "created_at, id"),
    ("agents_toolattempt", "sequence_id", None, "started_at, id"),
    ("agents_toolattempt", "result_sequence_id", "finished_at", "finished_at, id"),
]


def number_and_trigger(apps, schema_editor):
    connection = schema_editor.connection
    for table, column, stamp_on, order_by in COLUMNS:
        # A result already in is numbered too (after every start: the results come last).
        where = f"{stamp_on} IS NOT NULL" if stamp_on else ""
        decision_service.sequence.sequence_backfill(connection, table, column, order_by, where=where)
    decision_service.sequence.sequence_install(connection, [c[:3] for c in COLUMNS])


def drop_triggers(apps, schema_editor):
    decision_service.sequence.sequence_uninstall(schema_editor.connection, [c[:3] for c in COLUMNS])


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0017_attempt_outcome_label"),
        ("rules", "0027_event_sequence"),
    ]

    operations = [
        migrations.AddField(
            model_name="anomaly",
            name="sequence_id",
            field=decision_service.sequence.SequenceIdField(
                db_default=decision_service.sequence.NextSequenceId(),
                help_text="Its place in the order of everything the service records.",
                verbose_name="sequence id",
            ),
        ),
        migrations.AddField(
            model_name="queueevent",
            name="sequence_id",
            field=decision_service.sequence.SequenceIdField(
                db_default=decision_service.sequence.NextSequenceId(),
                help_text="Its place in the order of everything the service records.",
                verbose_name="sequence id",
            ),
        ),
        migrations.AddField(
            model_name="toolattempt",
            name="result_sequence_id",
            field=decision_service.sequence.SequenceIdField(
                help_text="The result's place in the order of everything the service records (set when it came).",
                stamp_on="finished_at",
                verbose_name="result sequence id",
            ),
        ),
        migrations.AddField(
            model_name="toolattempt",
            name="sequence_id",
            field=decision_service.sequence.SequenceIdField(
                db_default=decision_service.sequence.NextSequenceId(),
                help_text="Its place in the order of everything the service records.",
                verbose_name="sequence id",
            ),
        ),
        migrations.AddField(
            model_name="transition",
            name="sequence_id",
            field=decision_service.sequence.SequenceIdField(
                db_default=decision_service.sequence.NextSequenceId(),
                help_text="Its place in the order of everything the service records.",
                verbose_name="sequence id",
            ),
        ),
        migrations.AddIndex(
            model_name="transition",
            index=models.Index(fields=["session", "sequence_id"], name="transition_session_seq_idx"),
        ),
        migrations.RunPython(number_and_trigger, drop_triggers, elidable=False),
    ]

"""Anomalies and transitions point at decisions without a database foreign key.

On PostgreSQL rules 0015 partitions the decision log, whose ids are then no database key on their own
(its primary key becomes (id, created_at)), so no foreign key can reference them. The constraints go
before that migration runs (``run_before``); the retention sweep keeps the links valid instead.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0009_rate_limit"),
        ("rules", "0014_fact_masking"),
    ]
    run_before = [("rules", "0015_decision_partitions")]

    operations = [
        migrations.AlterField(
            model_name="anomaly",
            name="decision",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="anomalies",
                to="rules.decisionrecord",
            ),
        ),
        migrations.AlterField(
            model_name="transition",
            name="decision",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="transitions",
                to="rules.decisionrecord",
            ),
        ),
    ]

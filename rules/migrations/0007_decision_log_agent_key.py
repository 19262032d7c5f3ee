"""The decision log keeps the agent runtime as plain values (id and name), not a foreign key.

Agent runtimes belong to the agents app, which builds on rules; the log must not point up at it. The
columns do not change (``agent_id`` keeps every value); only the foreign-key constraints go. The
"ask your LLM" counters gain the agent's name, filled in from the agent runtimes.
"""

from django.db import migrations, models


def fill_agent_names(apps, schema_editor):
    AgentRuntime = apps.get_model("agents", "AgentRuntime")
    CandidateRequestCount = apps.get_model("rules", "CandidateRequestCount")
    names = dict(AgentRuntime.objects.values_list("pk", "name"))
    for row in CandidateRequestCount.objects.all().only("pk", "agent_id"):
        CandidateRequestCount.objects.filter(pk=row.pk).update(agent_name=names.get(row.agent_id, ""))


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0006_statemachine_moved_from_agents'),
        ('agents', '0007_statemachine_moved_to_rules'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The same column, without its foreign-key constraint.
            database_operations=[
                migrations.AlterField(
                    model_name='decisionrecord',
                    name='agent',
                    field=models.BigIntegerField(blank=True, null=True, db_column='agent_id'),
                ),
                migrations.AlterField(
                    model_name='candidaterequestcount',
                    name='agent',
                    field=models.BigIntegerField(db_column='agent_id'),
                ),
            ],
            # The field is called agent_id now; its index and constraints are the same on the same column.
            state_operations=[
                migrations.RemoveConstraint(
                    model_name='candidaterequestcount',
                    name='candidate_request_count_unique',
                ),
                migrations.RemoveConstraint(
                    model_name='decisionrecord',
                    name='decision_idempotency_key_unique_per_agent',
                ),
                migrations.RemoveIndex(
                    model_name='decisionrecord',
                    name='decision_agent_time_idx',
                ),
                migrations.RemoveField(
                    model_name='candidaterequestcount',
                    name='agent',
                ),
                migrations.RemoveField(
                    model_name='decisionrecord',
                    name='agent',
                ),
                migrations.AddField(
                    model_name='candidaterequestcount',
                    name='agent_id',
                    field=models.BigIntegerField(help_text="The agent runtime's id."),
                ),
                migrations.AddField(
                    model_name='decisionrecord',
                    name='agent_id',
                    field=models.BigIntegerField(blank=True, help_text="The agent runtime's id.", null=True),
                ),
                migrations.AddIndex(
                    model_name='decisionrecord',
                    index=models.Index(fields=['agent_id', '-created_at'], name='decision_agent_time_idx'),
                ),
                migrations.AddConstraint(
                    model_name='candidaterequestcount',
                    constraint=models.UniqueConstraint(fields=('point', 'agent_id', 'day'), name='candidate_request_count_unique'),
                ),
                migrations.AddConstraint(
                    model_name='decisionrecord',
                    constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key', ''), _negated=True), fields=('agent_id', 'idempotency_key'), name='decision_idempotency_key_unique_per_agent'),
                ),
            ],
        ),
        migrations.AddField(
            model_name='candidaterequestcount',
            name='agent_name',
            field=models.CharField(default='', max_length=64),
        ),
        migrations.RunPython(fill_agent_names, migrations.RunPython.noop),
    ]

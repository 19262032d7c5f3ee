"""State machines now belong to rules (see rules 0006): drop them from this app's state, point sessions
at rules' model (the same table, so the database keeps its foreign key), and move the content types so
that permissions and admin log entries follow the model."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ("statemachine", "historicalstatemachine")


def move_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="rules", model=model).exists():
            ContentType.objects.filter(app_label="agents", model=model).update(app_label="rules")


def move_content_types_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="agents", model=model).exists():
            ContentType.objects.filter(app_label="rules", model=model).update(app_label="agents")


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0006_session_key_index'),
        ('rules', '0006_statemachine_moved_from_agents'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='session',
                    name='machine',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='sessions', to='rules.statemachine'),
                ),
                migrations.DeleteModel(
                    name='HistoricalStateMachine',
                ),
                migrations.DeleteModel(
                    name='StateMachine',
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]

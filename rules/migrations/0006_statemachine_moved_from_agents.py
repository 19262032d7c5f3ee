"""State machines move from the agents app to rules, with their rows and history rows.

The tables keep their names (``agents_statemachine``, ``agents_historicalstatemachine``): this
migration only tells Django's model state that rules owns them; ``agents`` 0007 drops them from its
own state, points sessions at rules' model and moves the content types (so permissions and admin log
entries follow the model).
"""

import django.core.validators
import django.db.models.deletion
import simple_history.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0005_decision_session_move'),
        ('agents', '0006_session_key_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='HistoricalStateMachine',
                    fields=[
                        ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                        ('key', models.CharField(max_length=64, validators=[django.core.validators.RegexValidator('^[a-z][a-z0-9_]{0,63}$', 'Use lower-case letters, digits and underscores, starting with a letter (at most 64).')])),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('description', models.TextField(blank=True)),
                        ('states', models.JSONField(default=list)),
                        ('initial_state', models.CharField(max_length=64)),
                        ('handoff_state', models.CharField(help_text='Where sessions go for a human to take over.', max_length=64)),
                        ('terminal_states', models.JSONField(blank=True, default=list)),
                        ('transitions', models.JSONField(default=dict, help_text='State → the states it may move to.')),
                        ('actions', models.JSONField(blank=True, default=dict, help_text='State → the action types allowed in it.')),
                        ('timeouts', models.JSONField(blank=True, default=dict, help_text='State → seconds before a sweep hands it off.')),
                        ('max_anomalies', models.PositiveIntegerField(default=3, help_text='Model anomalies in one session before it is handed to a human.', validators=[django.core.validators.MinValueValidator(1)])),
                        ('history_id', models.AutoField(primary_key=True, serialize=False)),
                        ('history_date', models.DateTimeField(db_index=True)),
                        ('history_change_reason', models.CharField(max_length=100, null=True)),
                        ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ],
                    options={
                        'verbose_name': 'historical state machine',
                        'verbose_name_plural': 'historical state machines',
                        'db_table': 'agents_historicalstatemachine',
                        'ordering': ('-history_date', '-history_id'),
                        'get_latest_by': ('history_date', 'history_id'),
                    },
                    bases=(simple_history.models.HistoricalChanges, models.Model),
                ),
                migrations.CreateModel(
                    name='StateMachine',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key', models.CharField(max_length=64, validators=[django.core.validators.RegexValidator('^[a-z][a-z0-9_]{0,63}$', 'Use lower-case letters, digits and underscores, starting with a letter (at most 64).')])),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('description', models.TextField(blank=True)),
                        ('states', models.JSONField(default=list)),
                        ('initial_state', models.CharField(max_length=64)),
                        ('handoff_state', models.CharField(help_text='Where sessions go for a human to take over.', max_length=64)),
                        ('terminal_states', models.JSONField(blank=True, default=list)),
                        ('transitions', models.JSONField(default=dict, help_text='State → the states it may move to.')),
                        ('actions', models.JSONField(blank=True, default=dict, help_text='State → the action types allowed in it.')),
                        ('timeouts', models.JSONField(blank=True, default=dict, help_text='State → seconds before a sweep hands it off.')),
                        ('max_anomalies', models.PositiveIntegerField(default=3, help_text='Model anomalies in one session before it is handed to a human.', validators=[django.core.validators.MinValueValidator(1)])),
                    ],
                    options={
                        'db_table': 'agents_statemachine',
                        'ordering': ['key'],
                    },
                ),
                migrations.AddField(
                    model_name='historicalstatemachine',
                    name='history_user',
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
                ),
                migrations.AddConstraint(
                    model_name='statemachine',
                    constraint=models.UniqueConstraint(fields=('key',), name='state_machine_key_unique'),
                ),
                migrations.AddConstraint(
                    model_name='statemachine',
                    constraint=models.CheckConstraint(condition=models.Q(('max_anomalies__gte', 1)), name='state_machine_max_anomalies_positive'),
                ),
            ],
        ),
    ]

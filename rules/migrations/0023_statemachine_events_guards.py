"""State machines declare events and guards (issue 24). Every machine and history row keeps what it had and
declares neither (the defaults: no events, no guards)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0022_statemachine_fields'),
    ]

    operations = [
        migrations.AddField(
            model_name='historicalstatemachine',
            name='events',
            field=models.JSONField(blank=True, default=list, help_text="Named moves: each event's name, the states it may be sent in, its target and guard.", verbose_name='events'),
        ),
        migrations.AddField(
            model_name='historicalstatemachine',
            name='guards',
            field=models.JSONField(blank=True, default=dict, help_text="State → target state → what an agent's move along that edge needs.", verbose_name='guards'),
        ),
        migrations.AddField(
            model_name='statemachine',
            name='events',
            field=models.JSONField(blank=True, default=list, help_text="Named moves: each event's name, the states it may be sent in, its target and guard.", verbose_name='events'),
        ),
        migrations.AddField(
            model_name='statemachine',
            name='guards',
            field=models.JSONField(blank=True, default=dict, help_text="State → target state → what an agent's move along that edge needs.", verbose_name='guards'),
        ),
    ]

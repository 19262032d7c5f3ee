"""State machines declare the fields their sessions hold (issue 24). Every machine and history row keeps
what it had and declares no fields (the default, an empty list)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0021_idempotency_key_every_write'),
    ]

    operations = [
        migrations.AddField(
            model_name='historicalstatemachine',
            name='fields',
            field=models.JSONField(blank=True, default=list, help_text="What sessions of this machine hold: each field's name, type and constraints.", verbose_name='fields'),
        ),
        migrations.AddField(
            model_name='statemachine',
            name='fields',
            field=models.JSONField(blank=True, default=list, help_text="What sessions of this machine hold: each field's name, type and constraints.", verbose_name='fields'),
        ),
    ]

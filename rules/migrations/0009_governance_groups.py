"""The groups of change governance: config_editors propose changes, risk_approvers approve them.

Permissions are normally created after all migrations have run; they are created here first so that
the groups can be given them. Break glass is given to no group: grant it to named people.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

CONFIG_MODELS = ["threshold", "keywordlist", "keywordterm", "decisionpoint", "rule", "condition", "statemachine"]
READ_MODELS = ["configrevision", "decisionrecord", "candidaterequestcount", "changerequest", "regressioncase"]

GROUPS = {
    "config_editors": [
        *(f"{verb}_{model}" for model in CONFIG_MODELS for verb in ("add", "change", "delete", "view")),
        *(f"view_{model}" for model in READ_MODELS),
        "add_changerequest",
        "add_regressioncase",
    ],
    "risk_approvers": [
        *(f"view_{model}" for model in CONFIG_MODELS + READ_MODELS),
        "approve_changerequest",
    ],
}


def create_groups(apps, schema_editor):
    app_config = apps.get_app_config("rules")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="rules", codename__in=codenames))


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('rules', '0008_change_requests'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]

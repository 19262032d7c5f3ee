"""MCP servers are configuration: config_editors edit them, risk_approvers see them (as 0009 gave the
other configuration records). Permissions are created first, as 0009 explains."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {
    "config_editors": [f"{verb}_mcpserver" for verb in ("add", "change", "delete", "view")],
    "risk_approvers": ["view_mcpserver"],
}


def grant(apps, schema_editor):
    app_config = apps.get_app_config("rules")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        group = Group.objects.filter(name=name).first()
        if group is not None:
            group.permissions.add(*Permission.objects.filter(content_type__app_label="rules", codename__in=codenames))


def revoke(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(content_type__app_label="rules", codename__endswith="_mcpserver").delete()


class Migration(migrations.Migration):
    dependencies = [("rules", "0030_mcp_servers")]

    operations = [migrations.RunPython(grant, revoke)]

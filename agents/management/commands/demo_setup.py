from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import AgentRuntime
from agents.services import agent_create, agent_rotate_token
from rules.configio.apply import config_import
from rules.errors import ConfigError
from rules.selectors import revision_latest

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "after_sales.yaml"


class Command(BaseCommand):
    help = (
        "Load the after-sales demo configuration into an empty database, and print a fresh admin password "
        "and agent token. Run again, it keeps configuration changes made since (see --reset)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", default=str(DEMO_FILE))
        parser.add_argument("--admin", default="admin", help="Username of the admin account to (re)create.")
        parser.add_argument("--agent", default="demo_agent", help="Name of the demo agent runtime.")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the service is served.")
        parser.add_argument(
            "--reset", action="store_true", help="Put the demo configuration back, undoing changes made since."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc

        User = get_user_model()
        password = secrets.token_urlsafe(12)
        admin, _ = User.objects.get_or_create(username=options["admin"])
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()

        reason = f"demo_setup {path.name}"
        try:
            if revision_latest() is not None and not options["reset"]:
                preview = config_import(text=text, source=str(path), actor=admin, reason=reason, dry_run=True)
                if preview.changed:
                    self.stdout.write(
                        f"The configuration has changed since the demo was loaded ({len(preview.diff)} lines of "
                        "difference); keeping it. Run `manage.py demo_setup --reset` to put the demo back."
                    )
                else:
                    self.stdout.write("Demo configuration already loaded.")
            else:
                result = config_import(text=text, source=str(path), actor=admin, reason=reason)
                if result.change_request is not None:
                    self.stdout.write(
                        f"Putting the demo back changes high-risk records: it waits for a second person's approval "
                        f"as change request {result.change_request.pk}."
                    )
                elif result.revision is not None:
                    self.stdout.write(f"Demo configuration loaded as revision {result.revision}.")
                else:
                    self.stdout.write("Demo configuration already loaded.")
        except ConfigError as exc:
            raise CommandError("\n".join(exc.problems)) from exc

        name = options["agent"]
        agent = AgentRuntime.objects.filter(name=name).first()
        if agent is None:
            _, token = agent_create(
                name=name, point_keys=["intent_routing", "refund_approval"], actor=admin, reason="demo_setup"
            )
        else:
            token = agent_rotate_token(agent=agent, actor=admin, reason="demo_setup")

        url = options["url"].rstrip("/")
        self.stdout.write("")
        self.stdout.write(f"Admin:        {url}/admin/  user {admin.get_username()}  password {password}")
        self.stdout.write(f"Agent token:  {token}   (agent {name}; send as 'Authorization: Bearer <token>')")

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create, agent_rotate_token
from rules.config.selectors import revision_latest
from rules.config.yaml_import import config_import
from rules.errors import ConfigError
from rules.governance.change_requests import change_request_withdraw
from rules.governance.notifications import APPROVERS_GROUP
from rules.models import OPEN_STATES, ChangeRequest

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "after_sales.yaml"
ORDERS_SERVER = "orders"


def demo_text_with_orders_url(text: str, url: str) -> str:
    """The demo configuration with its ``orders`` MCP server at ``url`` (where the order system the
    gateway forwards ``orders.*`` to really listens; the file says the tools server's default port)."""
    document = yaml.safe_load(text)
    for server in document.get("mcp_servers") or []:
        if server.get("name") == ORDERS_SERVER:
            server["url"] = url
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


class Command(BaseCommand):
    help = (
        "Load the after-sales demo configuration into an empty database, and print fresh passwords for an "
        "admin and a second person who approves high-risk changes (risk_approvers), and an agent token. Run "
        "again, it keeps configuration changes made since (see --reset)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", default=str(DEMO_FILE))
        parser.add_argument("--admin", default="admin", help="Username of the admin account to (re)create.")
        parser.add_argument(
            "--approver",
            default="approver",
            help="Username of the second account, a risk approver: high-risk changes the admin makes wait for it.",
        )
        parser.add_argument("--agent", default="demo_agent", help="Name of the demo agent runtime.")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the service is served.")
        parser.add_argument(
            "--orders-url",
            default="",
            help=(
                "Where the demo's order system listens as an MCP server (the `orders` upstream of the MCP "
                "gateway); default: the file's, the tools server's default port."
            ),
        )
        parser.add_argument(
            "--reset",
            action="store_true",
            help=(
                "Put the demo configuration back, undoing changes made since; the admin's open change requests "
                "are withdrawn, and putting back high-risk records waits for the approver."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc
        if options["orders_url"]:
            text = demo_text_with_orders_url(text, options["orders_url"])

        approvers = Group.objects.filter(name=APPROVERS_GROUP).first()
        if approvers is None:
            raise CommandError(f"The {APPROVERS_GROUP} group is missing: run `manage.py migrate` first.")
        if options["approver"] == options["admin"]:
            raise CommandError("--approver must name another account than --admin: nobody approves their own change.")
        User = get_user_model()
        password = secrets.token_urlsafe(12)
        admin, _ = User.objects.get_or_create(username=options["admin"])
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()
        # A second person: four eyes hold for superusers too, so with the admin alone a high-risk change
        # (or putting the demo back after one) would wait for an approval nobody can give.
        approver_password = secrets.token_urlsafe(12)
        approver, _ = User.objects.get_or_create(username=options["approver"])
        approver.is_staff, approver.is_superuser, approver.is_active = True, False, True
        approver.set_password(approver_password)
        approver.save()
        approver.groups.add(approvers)

        reason = f"demo_setup {path.name}"
        if options["reset"]:
            self._withdraw_open_requests(admin)
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
                        f"as change request {result.change_request.pk}. Sign in as {approver.get_username()} to "
                        "approve it (Change requests)."
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
        self.stdout.write(
            f"Approver:     {url}/admin/  user {approver.get_username()}  password {approver_password}"
            "   (risk_approvers: approves the admin's high-risk changes)"
        )
        self.stdout.write(f"Agent token:  {token}   (agent {name}; send as 'Authorization: Bearer <token>')")

    def _withdraw_open_requests(self, admin: Any) -> None:
        """The admin's open change requests would change a configuration --reset is putting back: withdraw
        them (their author may), so no stale request waits on the demo. Requests of other people stay: the
        admin, a superuser, can approve or reject those."""
        for request in ChangeRequest.objects.filter(state__in=OPEN_STATES, author=admin).order_by("pk"):
            change_request_withdraw(request=request, actor=admin, reason="demo_setup --reset puts the demo back")
            self.stdout.write(f"Withdrew change request {request.pk} (the demo is put back).")

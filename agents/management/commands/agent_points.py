from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_change_points


class Command(BaseCommand):
    help = (
        "Grant (--add) and revoke (--remove) decision points of an existing agent runtime; its token is kept. "
        "The change is recorded in the agent's history with --user and --reason."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--add", action="append", default=[], metavar="KEY", help="A point to grant (repeat).")
        parser.add_argument("--remove", action="append", default=[], metavar="KEY", help="A point to revoke.")
        parser.add_argument("--reason", default="", help="Recorded in the agent's history.")
        parser.add_argument("--user", default="", help="Username recorded as having made the change.")

    def handle(self, *args: Any, **options: Any) -> None:
        add = [k for value in options["add"] for k in value.split(",")]
        remove = [k for value in options["remove"] for k in value.split(",")]
        if not any(k.strip() for k in add + remove):
            raise CommandError("Name a point to grant (--add KEY) or revoke (--remove KEY).")
        actor = None
        if options["user"]:
            actor = get_user_model().objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"No user named {options['user']!r}.")
        agent = AgentRuntime.objects.filter(name=options["name"]).first()
        if agent is None:
            raise CommandError(f"No agent named {options['name']!r}; create it with create_agent.")
        try:
            agent_change_points(
                agent=agent, add=add, remove=remove, actor=actor, reason=options["reason"] or "agent_points"
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        allowed = ", ".join(sorted(p.key for p in agent.points.all())) or "none"
        self.stdout.write(f"Agent {agent.name} may call: {allowed}.")

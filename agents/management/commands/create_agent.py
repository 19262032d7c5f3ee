from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create, agent_rotate_token, agent_set_points
from rules.config.revisions import config_change


class Command(BaseCommand):
    help = (
        "Create an agent runtime and print its bearer token (alone, on the last line, once). "
        "Only a hash of the token is stored. With --rotate, replace the token of an existing agent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--points", default="", help="Comma-separated decision point keys it may call.")
        parser.add_argument("--rotate", action="store_true", help="Replace the token of an existing agent.")
        parser.add_argument("--reason", default="", help="Recorded in the agent's history.")
        parser.add_argument("--user", default="", help="Username recorded as having made the change.")

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"]
        points = [p for p in options["points"].split(",") if p.strip()]
        actor = None
        if options["user"]:
            actor = get_user_model().objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"No user named {options['user']!r}.")
        existing = AgentRuntime.objects.filter(name=name).first()
        try:
            if options["rotate"]:
                if existing is None:
                    raise CommandError(f"No agent named {name!r}; create it first (without --rotate).")
                reason = options["reason"] or "create_agent --rotate"
                with config_change(actor=actor, reason=reason):
                    if points:
                        agent_set_points(agent=existing, point_keys=points, actor=actor, reason=reason)
                    token = agent_rotate_token(agent=existing, actor=actor, reason=reason)
                self.stderr.write(f"Token of agent {name} replaced; the old one no longer works.")
            else:
                if existing is not None:
                    raise CommandError(f"An agent named {name!r} exists; use --rotate to replace its token.")
                agent, token = agent_create(
                    name=name, point_keys=points, actor=actor, reason=options["reason"] or "create_agent"
                )
                allowed = ", ".join(p.key for p in agent.points.all()) or "none"
                self.stderr.write(f"Agent {name} created; it may call: {allowed}. Keep this token, it is shown once:")
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(token)

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.governance.tokens import staff_token_create


class Command(BaseCommand):
    help = (
        "Make an API token for a staff user, for automation (change requests, the human queue). The token "
        "is printed alone on the last line, once; only its hash is kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true", help="Replace the user's token (the old one stops).")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"There is no user '{options['username']}'.")
        try:
            token = staff_token_create(user=user, rotate=options["rotate"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(f"API token for {user.get_username()} (send as 'Authorization: Bearer <token>'):")
        self.stdout.write(token)

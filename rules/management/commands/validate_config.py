from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.config.document.validate import config_check


class Command(BaseCommand):
    help = (
        "Check a YAML configuration file without touching the database: every problem is listed with "
        "its path and line, and the exit status is 1 if there is any."
    )
    # A pure document check, meant for other teams' CI: no system checks, no database.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The YAML configuration file.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc
        document, problems = config_check(text)
        if problems or document is None:
            for problem in problems:
                self.stderr.write(problem)
            raise CommandError(f"{len(problems)} problem(s) in {path}.")
        rules = sum(len(p["rules"]) for p in document["points"])
        self.stdout.write(
            f"{path}: OK — {len(document['thresholds'])} thresholds, {len(document['keyword_lists'])} keyword "
            f"lists, {len(document['points'])} decision points with {rules} rules, "
            f"{len(document['machines'])} state machines."
        )

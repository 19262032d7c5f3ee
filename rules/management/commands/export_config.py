from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.config.yaml_export import config_export


class Command(BaseCommand):
    help = "Write the whole live configuration as YAML (to standard output, or to a file with -o)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", metavar="FILE", help="Write to FILE instead of standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = config_export()
        output = options.get("output")
        if not output:
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot write {output}: {exc}") from exc
        self.stderr.write(f"Configuration written to {output}.")

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rules.governance.regressions import regressions_check


class Command(BaseCommand):
    help = (
        "Check every pinned regression case against the live configuration: one line per failing case, "
        "and exit status 1 if any fails (for teams that keep their rules in git)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        checked, failures = regressions_check()
        for failure in failures:
            self.stdout.write(failure.line())
        if failures:
            raise CommandError(f"{len(failures)} of {checked} regression case(s) fail.")
        self.stdout.write(f"{checked} regression case(s) hold.")

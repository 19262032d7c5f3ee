from __future__ import annotations

import datetime as dt
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Build (or rebuild) the decision-point map's daily rollups for closed days in TIME_ZONE: the last "
        "--days closed days (default 90), or --since/--until. Each day replaces its rows; safe to repeat."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=90, help="The last DAYS closed days (default 90).")
        parser.add_argument("--since", type=dt.date.fromisoformat, help="First day, YYYY-MM-DD.")
        parser.add_argument("--until", type=dt.date.fromisoformat, help="Last day, YYYY-MM-DD (default yesterday).")

    def handle(self, *args: Any, **options: Any) -> None:
        from rules.reports.rollups import decision_rollups_rebuild, last_closed_day

        last = options["until"] or last_closed_day()
        first = options["since"] or last - dt.timedelta(days=options["days"] - 1)
        if first > last:
            raise CommandError("--since is after --until (or after the last closed day).")
        began = time.perf_counter()
        done = decision_rollups_rebuild(first=first, last=last)
        self.stdout.write(
            f"Rolled up {len(done)} closed days from {first.isoformat()} to {last.isoformat()} "
            f"in {time.perf_counter() - began:.1f} s."
        )

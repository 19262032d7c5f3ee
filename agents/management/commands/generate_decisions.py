from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Write a synthetic, realistic decision log for benchmarks: COUNT decisions spread over the last DAYS "
        "days, following the loaded configuration (points, rules, outcomes), with candidates, overrides, "
        "anomalies and 'ask your LLM' counters. COPY on PostgreSQL. Never run it against production data."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--count", type=int, required=True, help="How many decisions to write.")
        parser.add_argument("--days", type=int, default=14, help="Spread them over the last DAYS days (default 14).")
        parser.add_argument("--seed", type=int, default=11, help="Random seed (the same seed writes the same log).")

    def handle(self, *args: Any, **options: Any) -> None:
        from agents.sessions.synthetic import decisions_generate

        began = time.perf_counter()
        try:
            done = decisions_generate(count=options["count"], days=options["days"], seed=options["seed"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Wrote {done.decisions} decisions, {done.anomalies} anomalies and {done.needs_candidate} 'ask your LLM' "
            f"answers from {done.start.isoformat()} to {done.end.isoformat()} in {time.perf_counter() - began:.1f} s. "
            "Their days' rollups were dropped: run manage.py decision_rollups to rebuild them."
        )

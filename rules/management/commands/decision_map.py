from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Print the decision-point map as JSON (--days, --point), or with --snapshot store a snapshot of it "
        "now and e-mail it to staff (what Celery beat does every 14 days)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--snapshot", action="store_true", help="Store a snapshot now and e-mail it to staff.")
        parser.add_argument("--days", default=None, help="Window in days, 1 to 90 (default 14).")
        parser.add_argument("--point", default="", help="Only this decision point.")

    def handle(self, *args: Any, **options: Any) -> None:
        from rules.errors import InvalidRequest, UnknownPoint
        from rules.models import DecisionMapSnapshot, SnapshotTrigger
        from rules.reports.decision_map import days_parse, decision_map
        from rules.reports.snapshot_jobs import decision_map_snapshot_take

        if options["snapshot"]:
            if options["days"] is not None or options["point"]:
                raise CommandError("--snapshot takes no --days or --point: a snapshot is of every point, 14 days.")
            snapshot = decision_map_snapshot_take(trigger=SnapshotTrigger.COMMAND)
            snapshot = DecisionMapSnapshot.objects.get(pk=snapshot.pk)
            mailed = (
                f"e-mailed to {snapshot.mailed_to} staff address(es)"
                if snapshot.mailed_at is not None
                else "its e-mail to staff is queued for the Celery worker"
            )
            self.stdout.write(
                f"Snapshot {snapshot.pk} of the decision-point map taken at {snapshot.taken_at.isoformat()}; {mailed}."
            )
            return
        try:
            report = decision_map(days=days_parse(options["days"]), point=options["point"])
        except (InvalidRequest, UnknownPoint) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))

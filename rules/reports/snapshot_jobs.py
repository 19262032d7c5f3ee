"""The fortnightly snapshot of the decision-point map (docs/report.md, "Snapshots").

A snapshot stores the whole report of the last ``SNAPSHOT_DAYS`` days as it was, and is e-mailed to
staff once it is committed. Celery beat asks every hour whether one is due (the latest is
``SNAPSHOT_EVERY`` old, or there is none) rather than running every fourteen days: an interval that
long would start again from zero whenever beat restarts without its schedule file, and a deploy
every week would then mean no snapshot at all.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from decision_service.celery import task_queue
from rules.models import DecisionMapSnapshot, SnapshotTrigger
from rules.reports.decision_map import DAYS_DEFAULT, decision_map

SNAPSHOT_EVERY = dt.timedelta(days=14)
SNAPSHOT_DAYS = DAYS_DEFAULT
# Any constant: the PostgreSQL advisory lock that makes two beat runs take one snapshot, not two.
_LOCK = 0x5A4E_0011


@transaction.atomic
def decision_map_snapshot_take(
    *, trigger: str, actor: Any = None, now: dt.datetime | None = None
) -> DecisionMapSnapshot:
    """Store the map of the last ``SNAPSHOT_DAYS`` days up to ``now`` and queue its e-mail to staff
    (sent after the commit)."""
    now = now or timezone.now()
    report = decision_map(days=SNAPSHOT_DAYS, now=now, with_changes=False)
    snapshot = DecisionMapSnapshot(
        taken_at=now,
        days=SNAPSHOT_DAYS,
        trigger=trigger,
        taken_by=actor if actor is not None and actor.is_authenticated else None,
        report=report,
    )
    snapshot.full_clean()
    snapshot.save()
    pk = snapshot.pk
    transaction.on_commit(lambda: task_queue("rules.tasks.decision_map_snapshot_mail", pk))
    return snapshot


def decision_map_snapshot_due(now: dt.datetime | None = None) -> bool:
    latest = DecisionMapSnapshot.objects.order_by("-taken_at", "-pk").values_list("taken_at", flat=True).first()
    return latest is None or latest <= (now or timezone.now()) - SNAPSHOT_EVERY


@transaction.atomic
def decision_map_snapshot_if_due(*, now: dt.datetime | None = None) -> int | None:
    """The scheduled job: take a snapshot when one is due; returns its id, or ``None``."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK])
    # On SQLite the transaction already holds the database's write lock (IMMEDIATE), which serialises it.
    if not decision_map_snapshot_due(now):
        return None
    return decision_map_snapshot_take(trigger=SnapshotTrigger.SCHEDULE, now=now).pk

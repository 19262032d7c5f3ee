"""Celery tasks of the rules app: thin wrappers that take ids, import their service inside and return
plain data. Each is safe to run twice (late acknowledgement may redeliver a task after a worker dies)."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="rules.tasks.decision_log_purge")
def decision_log_purge(older_than_days: int | None = None) -> int:
    """The daily retention sweep (``CELERY_BEAT_SCHEDULE``); idempotent: a second run deletes nothing more."""
    from rules.decisions.retention import decision_log_purge as purge

    return purge(older_than_days=older_than_days)


@shared_task(name="rules.tasks.decision_log_partitions_ensure")
def decision_log_partitions_ensure() -> list[str]:
    """Create the log's monthly partitions ahead (``CELERY_BEAT_SCHEDULE``, daily; PostgreSQL only).

    Idempotent: a second run creates nothing more. Returns the names of the partitions it created.
    """
    from rules.decisions.partitions import decision_log_partitions_ensure as ensure

    return ensure()


@shared_task(name="rules.tasks.change_request_impact")
def change_request_impact(request_id: int) -> dict[str, Any]:
    """Replay recent traffic under a change request's proposal and store the result on the request."""
    from rules.governance.impact import change_request_impact_run

    return change_request_impact_run(request_id=request_id)


@shared_task(name="rules.tasks.change_request_notify")
def change_request_notify(request_id: int) -> int:
    """E-mail the approvers that a change request waits for them; returns how many were written to.

    The one task whose effect leaves the system: a worker that dies after sending and before the task is
    acknowledged sends the reminder again when the task is redelivered (at least once, not exactly)."""
    from rules.governance.notifications import change_request_notify_approvers

    return change_request_notify_approvers(request_id=request_id)


@shared_task(name="rules.tasks.change_requests_apply_due")
def change_requests_apply_due() -> list[int]:
    """Apply approved change requests whose time has come (Celery beat, every 30 s)."""
    from rules.governance.change_requests import change_requests_apply_due as apply_due

    return apply_due()


@shared_task(name="rules.tasks.decision_rollup_day")
def decision_rollup_day(day: str) -> int:
    """Recompute one closed day's rollups (``day`` as YYYY-MM-DD in TIME_ZONE); idempotent."""
    import datetime as dt

    from rules.reports.rollups import decision_rollup_day as rollup

    return rollup(day=dt.date.fromisoformat(day))


@shared_task(name="rules.tasks.decision_rollups_refresh")
def decision_rollups_refresh() -> list[str]:
    """Celery beat, hourly: the last closed days again, and any closed day without rollups."""
    from rules.reports.rollups import decision_rollups_refresh as refresh

    return [day.isoformat() for day in refresh()]


@shared_task(name="rules.tasks.decision_map_snapshot_if_due")
def decision_map_snapshot_if_due() -> int | None:
    """Celery beat, hourly: a snapshot of the decision-point map when the latest is 14 days old."""
    from rules.reports.snapshot_jobs import decision_map_snapshot_if_due as take

    return take()


@shared_task(name="rules.tasks.decision_map_snapshot_mail")
def decision_map_snapshot_mail(snapshot_id: int) -> int:
    """E-mail a snapshot to staff; a snapshot already mailed is not mailed twice."""
    from rules.governance.notifications import decision_map_snapshot_mail as mail

    return mail(snapshot_id=snapshot_id)

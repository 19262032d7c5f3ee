"""Celery tasks of the rules app: thin wrappers that import their service inside and return plain data."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="rules.tasks.decision_log_purge")
def decision_log_purge(older_than_days: int | None = None) -> int:
    """The daily retention sweep (``CELERY_BEAT_SCHEDULE``); idempotent: a second run deletes nothing more."""
    from rules.services.retention import decision_log_purge as purge

    return purge(older_than_days=older_than_days)

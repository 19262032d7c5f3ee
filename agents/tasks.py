from __future__ import annotations

from celery import shared_task


@shared_task(name="agents.tasks.session_timeouts_sweep")
def session_timeouts_sweep() -> int:
    """Hand sessions that waited too long in a state to a person. Idempotent; safe to overlap."""
    from agents.sessions.timeouts import session_timeouts_sweep as sweep

    return sweep()

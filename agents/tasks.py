from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="agents.tasks.session_timeouts_sweep")
def session_timeouts_sweep() -> int:
    """Hand sessions that waited too long in a state to a person. Idempotent; safe to overlap."""
    from agents.sessions.timeouts import session_timeouts_sweep as sweep

    return sweep()


@shared_task(bind=True, name="agents.tasks.webhook_deliver", max_retries=None)
def webhook_deliver(self: Any, delivery_id: int, attempt: int = 1) -> None:
    """Attempt ``attempt`` of a webhook delivery; a failure is retried by Celery after the backoff.
    Idempotent: a copy of an attempt already made does nothing (agents.webhooks.delivery)."""
    from agents.webhooks.delivery import webhook_delivery_attempt

    wait = webhook_delivery_attempt(delivery_id=delivery_id, attempt=attempt)
    # Without a broker (tasks run eagerly, errors propagated) Celery re-raises a retry to the caller instead
    # of running it: the attempts are made here in turn, without waiting, as a development setup needs.
    while wait is not None and self.request.is_eager:
        attempt += 1
        wait = webhook_delivery_attempt(delivery_id=delivery_id, attempt=attempt)
    if wait is not None:
        raise self.retry(args=[delivery_id, attempt + 1], countdown=wait)


@shared_task(name="agents.tasks.webhook_deliveries_requeue")
def webhook_deliveries_requeue() -> int:
    """Queue webhook deliveries whose task was lost or never queued. Idempotent; safe to overlap."""
    from agents.webhooks.delivery import webhook_deliveries_requeue as requeue

    return requeue()

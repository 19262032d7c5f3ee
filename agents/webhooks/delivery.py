"""Sending a delivery: one attempt at a time, each a signed POST, retried with backoff, then given up.

``webhook_delivery_attempt(delivery_id=…, attempt=n)`` is what the Celery task runs (``agents.tasks``);
it answers how many seconds to wait before attempt n+1, or None when the delivery is settled.

Invariants:
- An attempt is made once. It is claimed by a compare-and-set on ``attempts`` (n-1 → n) of an open
  delivery before anything is sent, so two copies of one task message (a redelivered message, the
  periodic requeue racing a late retry) send it once. Nothing is locked while the receiver is called.
- A receiver's 2xx delivers; anything else (another status, a refused connection, a timeout after
  ``ARBITER_WEBHOOK_TIMEOUT_SECONDS``) fails the attempt. Redirects are not followed: a 3xx fails.
- Attempt n failing waits ``backoff(n)``: ``ARBITER_WEBHOOK_BACKOFF_SECONDS`` · 2ⁿ⁻¹, at most
  ``ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS``, less up to half of it at random (jitter, so receivers coming
  back are not hit by every waiting delivery at once). After ``ARBITER_WEBHOOK_MAX_ATTEMPTS`` the delivery
  has failed.
- A failed delivery counts against its subscription, a delivered one sets the count back to 0; at
  ``ARBITER_WEBHOOK_DISABLE_AFTER`` failed deliveries in a row the subscription is disabled
  (``webhook_subscription_disable``: a history row with the reason, shown in the admin) and staff are
  mailed. A delivery whose subscription is inactive when its turn comes is skipped, not sent.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import time

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.webhooks.emit import delivery_queue
from agents.webhooks.models import OPEN_STATUSES, DeliveryStatus, WebhookDelivery, WebhookSubscription
from agents.webhooks.services import webhook_subscription_disable
from agents.webhooks.signing import signed_headers

logger = logging.getLogger(__name__)

USER_AGENT = "Arbiter-Webhooks/1"


def backoff(attempt: int, *, rng: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): exponential, capped, with jitter."""
    ceiling = min(
        settings.ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS, settings.ARBITER_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempt - 1)
    )
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def delivery_body(delivery: WebhookDelivery) -> bytes:
    return json.dumps(delivery.payload, ensure_ascii=False, separators=(",", ":")).encode()


def _signing_secrets(subscription: WebhookSubscription, now: dt.datetime) -> list[str]:
    keep_previous = subscription.previous_secret and (
        subscription.previous_secret_until is not None and subscription.previous_secret_until > now
    )
    return [subscription.secret, *([subscription.previous_secret] if keep_previous else [])]


def _send(subscription: WebhookSubscription, delivery: WebhookDelivery, now: dt.datetime) -> tuple[int | None, str]:
    """POST the delivery; (status code or None, error or "") — no error for a 2xx."""
    body = delivery_body(delivery)
    headers = signed_headers(
        _signing_secrets(subscription, now), msg_id=delivery.event_id, timestamp=int(time.time()), body=body
    )
    headers.update({"content-type": "application/json", "user-agent": USER_AGENT})
    try:
        response = httpx.post(
            subscription.url,
            content=body,
            headers=headers,
            timeout=settings.ARBITER_WEBHOOK_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    if 200 <= response.status_code < 300:
        return response.status_code, ""
    return response.status_code, f"HTTP {response.status_code}"


def webhook_delivery_attempt(*, delivery_id: int, attempt: int) -> float | None:
    """Make attempt ``attempt`` of a delivery (see the module docstring); seconds until the next, or None."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None or delivery.status not in OPEN_STATUSES or delivery.attempts != attempt - 1:
        return None  # settled, or this attempt was made already
    subscription = WebhookSubscription.objects.filter(pk=delivery.subscription_id).first()
    open_row = WebhookDelivery.objects.filter(pk=delivery_id, attempts=attempt - 1, status__in=OPEN_STATUSES)
    if subscription is None or not subscription.is_active:
        open_row.update(status=DeliveryStatus.SKIPPED, next_attempt_at=None)
        return None
    if open_row.update(attempts=attempt) != 1:
        return None  # another copy of this attempt claimed it
    now = timezone.now()
    code, error = _send(subscription, delivery, now)
    done = WebhookDelivery.objects.filter(pk=delivery_id)
    if not error:
        done.update(
            status=DeliveryStatus.DELIVERED,
            last_status_code=code,
            last_error="",
            delivered_at=timezone.now(),
            next_attempt_at=None,
        )
        # Not audited (excluded from the history): an operational count, not configuration.
        WebhookSubscription.objects.filter(pk=subscription.pk, consecutive_failures__gt=0).update(
            consecutive_failures=0
        )
        return None
    if attempt < settings.ARBITER_WEBHOOK_MAX_ATTEMPTS:
        wait = backoff(attempt)
        done.update(
            status=DeliveryStatus.RETRYING,
            last_status_code=code,
            last_error=error,
            next_attempt_at=timezone.now() + dt.timedelta(seconds=wait),
        )
        return wait
    with transaction.atomic():  # the failure and its count together: whoever sees one sees the other
        done.update(status=DeliveryStatus.FAILED, last_status_code=code, last_error=error, next_attempt_at=None)
        _count_failure(subscription.pk, error)
    return None


def _count_failure(subscription_id: int, error: str) -> None:
    with transaction.atomic():
        WebhookSubscription.objects.filter(pk=subscription_id).update(
            consecutive_failures=F("consecutive_failures") + 1
        )
        subscription = WebhookSubscription.objects.select_for_update().get(pk=subscription_id)
        limit = settings.ARBITER_WEBHOOK_DISABLE_AFTER
        if not subscription.is_active or subscription.consecutive_failures < limit:
            return
        reason = f"Disabled after {subscription.consecutive_failures} failed deliveries in a row (the last: {error})."
        webhook_subscription_disable(subscription=subscription, actor=None, reason=reason)
        transaction.on_commit(lambda: _tell_staff(subscription, reason))


def _tell_staff(subscription: WebhookSubscription, reason: str) -> None:
    from rules.governance.notifications import staff_to_notify

    logger.warning("webhook subscription %s (%s) disabled: %s", subscription.pk, subscription.url, reason)
    recipients = staff_to_notify()
    if not recipients:
        return
    base = settings.ARBITER_BASE_URL.rstrip("/")
    send_mail(
        subject=f"[Arbiter] Webhook subscription {subscription.pk} of {subscription.agent} disabled",
        message=(
            f"Deliveries to {subscription.url} kept failing. {reason}\n\n"
            f"Fix the receiver, then enable the subscription again and redeliver what it missed: "
            f"{base}/admin/agents/webhooksubscription/{subscription.pk}/change/\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )


def webhook_deliveries_requeue(*, older_than_seconds: float = 120.0) -> int:
    """Queue again every open delivery whose attempt is overdue by ``older_than_seconds`` (a task that
    could not be queued, or was lost with a broker). Idempotent: a copy of an attempt already made does
    nothing. Returns how many were queued."""
    cutoff = timezone.now() - dt.timedelta(seconds=older_than_seconds)
    overdue = WebhookDelivery.objects.filter(status__in=OPEN_STATUSES, next_attempt_at__lt=cutoff)
    queued = 0
    for pk, attempts in overdue.values_list("pk", "attempts")[:1000]:
        # Due again only after another ``older_than_seconds``: a backlog is not queued again every minute.
        WebhookDelivery.objects.filter(pk=pk, attempts=attempts).update(next_attempt_at=timezone.now())
        queued += delivery_queue(pk, attempt=attempts + 1)
    return queued


def webhook_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery's event again as a new delivery to the same subscription (same event id, so a
    receiver that has it already can drop it); queued when the caller's transaction commits."""
    again = WebhookDelivery.objects.create(
        subscription_id=delivery.subscription_id,
        event_id=delivery.event_id,
        kind=delivery.kind,
        payload=delivery.payload,
        next_attempt_at=timezone.now(),
        redelivery_of=delivery,
    )
    transaction.on_commit(lambda: delivery_queue(again.pk, attempt=1))
    return again

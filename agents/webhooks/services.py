"""Writes to webhook subscriptions, each recording who and why (``audited_save``: a history row a write).

The secret is made here and returned only by the service that made it (``webhook_subscription_create``,
``webhook_subscription_rotate_secret``): the admin shows it once, as it shows an agent's token. A rotated
secret keeps signing alongside the new one for ``PREVIOUS_SECRET_HOURS``, so a receiver can switch over
without refusing a delivery.

Disabling: ``webhook_subscription_disable`` is what a person does, and what the delivery task does after
``ARBITER_WEBHOOK_DISABLE_AFTER`` failed deliveries in a row (``agents.webhooks.delivery``); either way the
history row carries the reason, and ``disabled_at`` / ``disabled_reason`` say so on the admin page until
someone enables it again (which forgets the failures).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.utils import timezone

from agents.runtimes.models import AgentRuntime
from agents.webhooks.models import WebhookSubscription
from agents.webhooks.signing import new_secret
from rules.config.revisions import Actor, audited_save

PREVIOUS_SECRET_HOURS = 24


def _set_secret(subscription: WebhookSubscription, secret: str) -> None:
    subscription.secret = secret
    subscription.secret_prefix = secret[:12]


def webhook_subscription_create(
    *,
    agent: AgentRuntime,
    url: str,
    event_kinds: Iterable[str],
    actor: Actor,
    reason: str,
    description: str = "",
    is_active: bool = True,
) -> tuple[WebhookSubscription, str]:
    """Subscribe ``url`` to ``event_kinds`` for ``agent``; returns the subscription and its secret (the
    only time the secret is handed out, apart from a rotation)."""
    secret = new_secret()
    subscription = WebhookSubscription(
        agent=agent, url=url.strip(), event_kinds=list(dict.fromkeys(event_kinds)), description=description
    )
    subscription.is_active = is_active
    _set_secret(subscription, secret)
    audited_save(subscription, actor=actor, reason=reason)
    return subscription, secret


def webhook_subscription_save(*, subscription: WebhookSubscription, actor: Actor, reason: str) -> WebhookSubscription:
    """Save an edited subscription (URL, kinds, description, active). Made inactive, it is disabled with
    ``reason``; made active again, it is enabled (see ``webhook_subscription_enable``)."""
    if subscription.is_active and subscription.disabled_at is not None:
        _enabled(subscription)
    elif not subscription.is_active and subscription.disabled_at is None and subscription.pk is not None:
        subscription.disabled_at = timezone.now()
        subscription.disabled_reason = reason[:500]
    audited_save(subscription, actor=actor, reason=reason)
    return subscription


def webhook_subscription_rotate_secret(
    *, subscription: WebhookSubscription, actor: Actor, reason: str, now: dt.datetime | None = None
) -> str:
    """A new secret; the old one goes on signing next to it for ``PREVIOUS_SECRET_HOURS``."""
    now = now or timezone.now()
    subscription.previous_secret = subscription.secret
    subscription.previous_secret_until = now + dt.timedelta(hours=PREVIOUS_SECRET_HOURS)
    secret = new_secret()
    _set_secret(subscription, secret)
    audited_save(subscription, actor=actor, reason=reason)
    return secret


def webhook_subscription_disable(
    *, subscription: WebhookSubscription, actor: Actor, reason: str, now: dt.datetime | None = None
) -> WebhookSubscription:
    """Stop sending to the subscription; ``reason`` is kept on it (and in its history) to say why."""
    subscription.is_active = False
    subscription.disabled_at = now or timezone.now()
    subscription.disabled_reason = reason[:500]
    audited_save(subscription, actor=actor, reason=reason)
    return subscription


def _enabled(subscription: WebhookSubscription) -> None:
    subscription.is_active = True
    subscription.disabled_at = None
    subscription.disabled_reason = ""
    subscription.consecutive_failures = 0


def webhook_subscription_enable(*, subscription: WebhookSubscription, actor: Actor, reason: str) -> WebhookSubscription:
    """Send to the subscription again, its failures forgotten. Deliveries skipped meanwhile stay skipped
    (redeliver them from the delivery log)."""
    _enabled(subscription)
    audited_save(subscription, actor=actor, reason=reason)
    return subscription

"""Signed webhooks: an agent's subscriptions (audited configuration) and the deliveries made to them.

A ``WebhookSubscription`` names an agent, an http(s) URL, the event kinds it wants and the secret its
deliveries are signed with (docs/webhooks.md). It is configuration: every write goes through
``agents.webhooks.services`` and leaves a history row saying who and why. Its secrets and its run of
failures are not in that history: a secret must not be readable from the audit trail, and the failure
count moves with every delivery (the disabling it leads to is recorded, with its reason).

A ``WebhookDelivery`` is one event sent to one subscription: written in the transaction that made the
event (an outbox), then sent by a Celery task after the commit, attempt after attempt until the
receiver answers 2xx or the attempts run out. It is a log, never configuration.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from agents.runtimes.models import AgentRuntime


class EventKind(models.TextChoices):
    SESSION_HANDED_OFF = "session.handed_off", _("session handed off to a person")
    SESSION_TIMED_OUT = "session.timed_out", _("session timed out (handed off)")
    SESSION_RETURNED = "session.returned", _("session returned to the bot by an operator")
    SESSION_RESOLVED = "session.resolved", _("session resolved by an operator")
    TOOL_CALL_AWAITING_APPROVAL = "tool_call.awaiting_approval", _("tool call awaiting approval")
    TOOL_CALL_DECIDED = "tool_call.decided", _("tool call approved or rejected")
    BREAKER_OPENED = "breaker.opened", _("tool breaker opened")
    BREAKER_CLOSED = "breaker.closed", _("tool breaker closed")
    CHANGE_REQUEST_PENDING = "change_request.pending", _("change request pending approval")
    CHANGE_REQUEST_APPLIED = "change_request.applied", _("change request applied")


# Events about the whole installation, not one agent's sessions: every subscription that asks for them
# gets them, whichever agent it belongs to (docs/webhooks.md).
INSTALLATION_KINDS = frozenset(
    {
        EventKind.BREAKER_OPENED,
        EventKind.BREAKER_CLOSED,
        EventKind.CHANGE_REQUEST_PENDING,
        EventKind.CHANGE_REQUEST_APPLIED,
    }
)


class WebhookSubscription(models.Model):
    """Where an agent's runtime wants to be told of events, and the secret that signs what it is told."""

    agent = models.ForeignKey(
        AgentRuntime, on_delete=models.PROTECT, related_name="webhook_subscriptions", verbose_name=_("agent")
    )
    url = models.URLField(
        max_length=2000,
        # No ftp:// (URLField's default admits it): deliveries are HTTP POSTs.
        validators=[URLValidator(schemes=["http", "https"])],
        verbose_name=_("URL"),
        help_text=_("Where deliveries are POSTed: an http or https address."),
    )
    description = models.CharField(max_length=200, blank=True, verbose_name=_("description"))
    event_kinds = models.JSONField(
        default=list, verbose_name=_("event kinds"), help_text=_("The kinds of event sent to this URL.")
    )
    secret = models.CharField(max_length=64, editable=False, verbose_name=_("secret"))
    # Kept for a while after a rotation, signing alongside the new one, so a receiver can switch over.
    previous_secret = models.CharField(max_length=64, blank=True, editable=False, verbose_name=_("previous secret"))
    previous_secret_until = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("previous secret signs until")
    )
    secret_prefix = models.CharField(max_length=16, editable=False, verbose_name=_("secret starts with"))
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("disabled at"))
    disabled_reason = models.CharField(max_length=500, blank=True, editable=False, verbose_name=_("disabled because"))
    consecutive_failures = models.PositiveIntegerField(
        default=0,
        editable=False,
        verbose_name=_("consecutive failures"),
        help_text=_("Deliveries that failed in a row (every attempt used); a success sets it back to 0."),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    history = HistoricalRecords(excluded_fields=["secret", "previous_secret", "consecutive_failures"])

    class Meta:
        verbose_name = _("webhook subscription")
        verbose_name_plural = _("webhook subscriptions")
        ordering = ["agent__name", "pk"]

    def __str__(self) -> str:
        return f"{self.agent} → {self.url}"

    def clean(self) -> None:
        if problem := event_kinds_problem(self.event_kinds):
            raise ValidationError({"event_kinds": problem})


def event_kinds_problem(kinds: Any) -> str | None:
    """Why ``kinds`` is not a list of event kinds a subscription may ask for, or None."""
    if not isinstance(kinds, list) or not kinds:
        return str(_("Choose at least one kind of event."))
    unknown = sorted({str(k) for k in kinds} - set(EventKind.values))
    if unknown:
        return str(_("Unknown event kinds: %(kinds)s.") % {"kinds": ", ".join(unknown)})
    return None


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RETRYING = "retrying", _("retrying")
    DELIVERED = "delivered", _("delivered")
    FAILED = "failed", _("failed")
    SKIPPED = "skipped", _("skipped: subscription inactive")


OPEN_STATUSES = (DeliveryStatus.PENDING, DeliveryStatus.RETRYING)


class WebhookDelivery(models.Model):
    """One event for one subscription and what became of sending it."""

    # No database constraint: the row is written in the transaction of the event, from a per-process list of
    # subscriptions (agents.webhooks.emit) that may be a fraction of a second stale, and a subscription
    # deleted meanwhile must not fail a session's move. Subscriptions are not deleted through Arbiter
    # (disable one instead); a delivery of a deleted one is skipped.
    subscription = models.ForeignKey(
        WebhookSubscription,
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="deliveries",
        verbose_name=_("subscription"),
    )
    # The event's id, the same for every subscription it goes to and every attempt (``webhook-id``): a
    # receiver drops what it has seen.
    event_id = models.CharField(max_length=40, verbose_name=_("event id"))
    kind = models.CharField(max_length=40, choices=EventKind.choices, verbose_name=_("kind"))
    payload = models.JSONField(verbose_name=_("payload"))
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING, verbose_name=_("status")
    )
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    last_status_code = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("last status code"))
    last_error = models.CharField(max_length=500, blank=True, verbose_name=_("last error"))
    next_attempt_at = models.DateTimeField(null=True, blank=True, verbose_name=_("next attempt at"))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))
    delivered_at = models.DateTimeField(null=True, blank=True, verbose_name=_("delivered at"))
    redelivery_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("redelivery of")
    )

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["subscription", "-created_at"], name="webhook_delivery_sub_idx")]
        permissions = [("redeliver_webhooks", "Can send a webhook delivery again")]

    def __str__(self) -> str:
        return f"{self.kind} {self.event_id} → {self.subscription_id} ({self.status})"


def new_event_id() -> str:
    return f"evt_{uuid.uuid4().hex}"

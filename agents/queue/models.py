"""The human queue's timeline: a person taking a waiting session or giving it back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.sessions.models import Session
from decision_service.sequence import SequenceIdField


class QueueEventKind(models.TextChoices):
    CLAIM = "claim", _("claimed")
    RELEASE = "release", _("released")
    APPROVE = "approve", _("tool call approved")
    REJECT = "reject", _("tool call rejected")


class QueueEvent(models.Model):
    """A person taking a waiting session or giving it back: on the session's timeline, not a move
    (the state and ``seq`` do not change). Written once by ``agents.queue.services``."""

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="queue_events", verbose_name=_("session")
    )
    kind = models.CharField(max_length=16, choices=QueueEventKind.choices, verbose_name=_("kind"))
    actor = models.CharField(max_length=128, help_text=_("operator:<username>"), verbose_name=_("actor"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    state = models.CharField(
        max_length=64, help_text=_("The session's state then (its machine's handoff state)."), verbose_name=_("state")
    )
    note = models.TextField(blank=True, verbose_name=_("note"))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))
    sequence_id = SequenceIdField(
        verbose_name=_("sequence id"), help_text=_("Its place in the order of everything the service records.")
    )

    class Meta:
        verbose_name = _("queue event")
        verbose_name_plural = _("queue events")
        ordering = ["session", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.kind} by {self.actor}"

"""Events a runtime reports about its own turn: its model calls and the tools it calls without Arbiter.

Arbiter records what passes through it (moves, decisions, tool calls it governs); a ``TraceEvent`` is what
the runtime did on its side and tells Arbiter afterwards (``POST /api/v1/sessions/<id>/trace``), so a
session's story has the model's calls and the runtime's own tools in the same order as the rest
(``sequence_id``). Not configuration, so not audited; kept or dropped by turn (``agents.traces.sampling``).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents.sessions.models import Session
from decision_service.sequence import SequenceIdField


class TraceEventType(models.TextChoices):
    LLM_CALL = "llm_call", _("model call")
    TOOL_INVOCATION = "tool_invocation", _("tool invocation")
    ERROR_HANDLED = "error_handled", _("error handled")


class TraceStatus(models.TextChoices):
    OK = "ok", _("ok")
    ERROR = "error", _("error")


class TraceEvent(models.Model):
    """One reported event. ``name`` is the model asked (``gen_ai.request.model``) or the tool called;
    ``attributes`` hold the rest under their OpenTelemetry names, text masked as the decision log's."""

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="trace_events", verbose_name=_("session")
    )
    sequence_id = SequenceIdField()
    type = models.CharField(max_length=24, choices=TraceEventType.choices, verbose_name=_("type"))
    event_id = models.CharField(
        max_length=64,
        blank=True,
        help_text=_("The runtime's id for the event: the same id sent again is not recorded twice."),
        verbose_name=_("event id"),
    )
    turn_id = models.CharField(max_length=64, blank=True, verbose_name=_("turn id"))
    status = models.CharField(max_length=8, choices=TraceStatus.choices, verbose_name=_("status"))
    name = models.CharField(max_length=128, blank=True, verbose_name=_("model or tool"))
    point = models.CharField(max_length=64, blank=True, verbose_name=_("decision point"))
    prompt_version = models.CharField(max_length=64, blank=True, verbose_name=_("prompt version"))
    duration_ms = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("duration (ms)"))
    error_code = models.CharField(max_length=64, blank=True, verbose_name=_("error code"))
    attributes = models.JSONField(default=dict, blank=True, verbose_name=_("attributes"))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("trace event")
        verbose_name_plural = _("trace events")
        ordering = ["sequence_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "event_id"], condition=~Q(event_id=""), name="trace_event_id_unique_per_session"
            )
        ]
        indexes = [models.Index(fields=["session", "sequence_id"], name="trace_event_session_seq_idx")]

    def __str__(self) -> str:
        return f"{self.type} {self.name} ({self.status})"

"""Agent runtimes (who may call Arbiter) and state machines (how their sessions may move)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from agents.machines import machine_problems
from rules.models import DecisionPoint
from rules.models.config import key_validator


class AgentRuntime(models.Model):
    """An agent runtime calling the API with a bearer token. Only a hash of the token is kept."""

    name = models.CharField(max_length=64, validators=[key_validator])
    description = models.TextField(blank=True)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(
        max_length=16, editable=False, help_text="The first characters of the token, to recognise it."
    )
    points = models.ManyToManyField(DecisionPoint, blank=True, related_name="agents")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords(excluded_fields=["token_hash"], m2m_fields=[points])

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["name"], name="agent_runtime_name_unique")]

    def __str__(self) -> str:
        return self.name


class StateMachine(models.Model):
    """States, allowed transitions, per-state action whitelists and timeouts for one kind of session."""

    key = models.CharField(max_length=64, validators=[key_validator])
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    states = models.JSONField(default=list)
    initial_state = models.CharField(max_length=64)
    handoff_state = models.CharField(max_length=64, help_text="Where sessions go for a human to take over.")
    terminal_states = models.JSONField(default=list, blank=True)
    transitions = models.JSONField(default=dict, help_text="State → the states it may move to.")
    actions = models.JSONField(default=dict, blank=True, help_text="State → the action types allowed in it.")
    timeouts = models.JSONField(default=dict, blank=True, help_text="State → seconds before a sweep hands it off.")
    max_anomalies = models.PositiveIntegerField(
        default=3,
        validators=[MinValueValidator(1)],
        help_text="Model anomalies in one session before it is handed to a human.",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="state_machine_key_unique"),
            models.CheckConstraint(condition=Q(max_anomalies__gte=1), name="state_machine_max_anomalies_positive"),
        ]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        problems = machine_problems(
            states=self.states,
            initial_state=self.initial_state,
            handoff_state=self.handoff_state,
            terminal_states=self.terminal_states,
            transitions=self.transitions,
            actions=self.actions,
            timeouts=self.timeouts,
        )
        if problems:
            raise ValidationError(problems)


class Anomaly(models.Model):
    """Something a model did wrong: output that was not a valid candidate, an outcome it may not name,
    a move its session's machine forbids. Counted per session; never configuration, so not audited."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    agent = models.ForeignKey(AgentRuntime, null=True, on_delete=models.SET_NULL, related_name="anomalies")
    session_id = models.CharField(max_length=128, blank=True, db_index=True)
    point = models.CharField(max_length=64, blank=True)
    code = models.CharField(max_length=64)
    detail = models.TextField(blank=True)
    raw = models.TextField(blank=True)
    decision = models.ForeignKey(
        "rules.DecisionRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="anomalies"
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "anomalies"

    def __str__(self) -> str:
        return f"{self.code} ({self.session_id or 'no session'})"

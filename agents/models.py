"""Agent runtimes (who may call Arbiter), their sessions under state machines, transitions and anomalies."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from simple_history.models import HistoricalRecords

from rules.models import DecisionPoint, StateMachine
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
    # Per-agent rate limit, a token bucket (agents.ratelimit): ``rate_per_minute`` requests a minute on
    # average, up to ``rate_burst`` at once. No rate: no limit.
    rate_per_minute = models.PositiveIntegerField(
        "requests per minute",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="How many API requests a minute this agent may send on average; empty for no limit.",
    )
    rate_burst = models.PositiveIntegerField(
        "burst",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="How many requests it may send at once before the rate applies; empty for a minute's worth "
        "(the rate per minute).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords(excluded_fields=["token_hash"], m2m_fields=[points])

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["name"], name="agent_runtime_name_unique"),
            models.CheckConstraint(
                condition=models.Q(rate_per_minute__isnull=True) | models.Q(rate_per_minute__gte=1),
                name="agent_rate_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(rate_burst__isnull=True) | models.Q(rate_burst__gte=1),
                name="agent_burst_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name


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
    # No database constraint: on PostgreSQL the log is partitioned and its ids alone are not a key there
    # (see rules.models.decisions). The retention sweep empties these links before it drops a month.
    decision = models.ForeignKey(
        "rules.DecisionRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="anomalies",
        db_constraint=False,
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "anomalies"

    def __str__(self) -> str:
        return f"{self.code} ({self.session_id or 'no session'})"


class Session(models.Model):
    """One conversation's place in its state machine. Only ``agents.services.sessions`` changes it."""

    agent = models.ForeignKey(AgentRuntime, on_delete=models.PROTECT, related_name="sessions")
    key = models.CharField(max_length=128, help_text="The session id the agent uses.")
    machine = models.ForeignKey(StateMachine, on_delete=models.PROTECT, related_name="sessions")
    state = models.CharField(max_length=64)
    seq = models.PositiveIntegerField(default=0, help_text="Moves so far; assigned by the server, gap-free.")
    stack = models.JSONField(default=list, blank=True, help_text="States to resume after interrupts, innermost last.")
    context = models.JSONField(default=dict, blank=True)
    anomaly_count = models.PositiveIntegerField(default=0)
    handoff_reason = models.CharField(max_length=64, blank=True)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_sessions",
        help_text="The person who has taken the session from the human queue; cleared by every move.",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    state_entered_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="session_key_unique_per_agent")]
        permissions = [("work_human_queue", "Can claim, release, return and resolve sessions in the human queue")]
        indexes = [
            models.Index(fields=["machine", "state", "state_entered_at"], name="session_machine_state_idx"),
            models.Index(fields=["state_entered_at"], name="session_state_entered_idx"),
            # Operators look sessions up by the id agents use, across agents.
            models.Index(fields=["key"], name="session_key_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"


class TransitionKind(models.TextChoices):
    MOVE = "move", "move"
    DECISION = "decision", "move from a decision"
    FALLBACK = "fallback", "fallback after a decision"
    INTERRUPT = "interrupt", "interrupt"
    RESUME = "resume", "resume"
    MODEL_FAILURE = "model_failure", "handed off: model failure"
    TIMEOUT = "timeout", "handed off: timeout"
    RETURN = "return", "returned to the bot by a person"
    RESOLVE = "resolve", "resolved by a person"


class Transition(models.Model):
    """One move of a session, numbered by ``seq``; written once, never changed."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="transitions")
    seq = models.PositiveIntegerField()
    from_state = models.CharField(max_length=64)
    to_state = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=TransitionKind.choices, default=TransitionKind.MOVE)
    actor = models.CharField(max_length=128, help_text="The agent, or system:<what> for sweeps and policies.")
    reason = models.TextField(blank=True)
    # Unconstrained like Anomaly.decision: the log is partitioned on PostgreSQL.
    decision = models.ForeignKey(
        "rules.DecisionRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="transitions",
        db_constraint=False,
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    request_digest = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="transition_seq_unique_per_session"),
            models.UniqueConstraint(
                fields=["session", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="transition_idempotency_key_unique",
            ),
            models.CheckConstraint(condition=models.Q(seq__gte=1), name="transition_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.seq}: {self.from_state} → {self.to_state}"


class QueueEventKind(models.TextChoices):
    CLAIM = "claim", "claimed"
    RELEASE = "release", "released"


class QueueEvent(models.Model):
    """A person taking a waiting session or giving it back: on the session's timeline, not a move
    (the state and ``seq`` do not change). Written once by ``agents.services.queue``."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="queue_events")
    kind = models.CharField(max_length=16, choices=QueueEventKind.choices)
    actor = models.CharField(max_length=128, help_text="operator:<username>")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=64, help_text="The session's state then (its machine's handoff state).")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["session", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.kind} by {self.actor}"

"""Sessions under state machines, their transitions (moves) and the anomalies counted against them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.runtimes.models import AgentRuntime
from decision_service.sequence import SequenceIdField
from rules.models import StateMachine


class Anomaly(models.Model):
    """Something a model did wrong: output that was not a valid candidate, an outcome it may not name,
    a move its session's machine forbids. Counted per session; never configuration, so not audited."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))
    agent = models.ForeignKey(
        AgentRuntime, null=True, on_delete=models.SET_NULL, related_name="anomalies", verbose_name=_("agent")
    )
    session_id = models.CharField(max_length=128, blank=True, db_index=True, verbose_name=_("session id"))
    point = models.CharField(max_length=64, blank=True, verbose_name=_("point"))
    code = models.CharField(max_length=64, verbose_name=_("code"))
    detail = models.TextField(blank=True, verbose_name=_("detail"))
    raw = models.TextField(blank=True, verbose_name=_("raw"))
    # No database constraint: on PostgreSQL the log is partitioned and its ids alone are not a key there
    # (see rules.decisions.models). The retention sweep empties these links before it drops a month.
    decision = models.ForeignKey(
        "rules.DecisionRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="anomalies",
        db_constraint=False,
        verbose_name=_("decision"),
    )

    sequence_id = SequenceIdField(
        verbose_name=_("sequence id"), help_text=_("Its place in the order of everything the service records.")
    )

    class Meta:
        verbose_name = _("anomaly")
        ordering = ["-created_at"]
        verbose_name_plural = _("anomalies")

    def __str__(self) -> str:
        return f"{self.code} ({self.session_id or gettext('no session')})"


class Session(models.Model):
    """One conversation's place in its state machine. Only ``agents.sessions.services`` changes it."""

    agent = models.ForeignKey(AgentRuntime, on_delete=models.PROTECT, related_name="sessions", verbose_name=_("agent"))
    key = models.CharField(max_length=128, help_text=_("The session id the agent uses."), verbose_name=_("key"))
    machine = models.ForeignKey(
        StateMachine, on_delete=models.PROTECT, related_name="sessions", verbose_name=_("machine")
    )
    state = models.CharField(max_length=64, verbose_name=_("state"))
    seq = models.PositiveIntegerField(
        default=0, help_text=_("Moves so far; assigned by the server, gap-free."), verbose_name=_("seq")
    )
    stack = models.JSONField(
        default=list,
        blank=True,
        help_text=_("States to resume after interrupts, innermost last."),
        verbose_name=_("stack"),
    )
    context = models.JSONField(default=dict, blank=True, verbose_name=_("context"))
    # The machine's fields as checked (agents.sessions.fields): written only by fields_apply's moves.
    field_values = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("The session's fields, each checked against the machine's declaration when it was set."),
        verbose_name=_("field values"),
    )
    anomaly_count = models.PositiveIntegerField(default=0, verbose_name=_("anomaly count"))
    handoff_reason = models.CharField(max_length=64, blank=True, verbose_name=_("handoff reason"))
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_sessions",
        help_text=_("The person who has taken the session from the human queue; cleared by every move."),
        verbose_name=_("claimed by"),
    )
    claimed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("claimed at"))
    state_entered_at = models.DateTimeField(verbose_name=_("state entered at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
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
    MOVE = "move", _("move")
    DECISION = "decision", _("move from a decision")
    FALLBACK = "fallback", _("fallback after a decision")
    INTERRUPT = "interrupt", _("interrupt")
    RESUME = "resume", _("resume")
    MODEL_FAILURE = "model_failure", _("handed off: model failure")
    TIMEOUT = "timeout", _("handed off: timeout")
    RETURN = "return", _("returned to the bot by a person")
    RESOLVE = "resolve", _("resolved by a person")
    FIELDS = "fields", _("fields updated")
    APPROVAL = "approval", _("a tool call awaiting or after a person's approval")
    TOOL_GAVE_UP = "tool_gave_up", _("a tool call gave up")


class Transition(models.Model):
    """One move of a session, numbered by ``seq``; written once, never changed."""

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="transitions", verbose_name=_("session")
    )
    seq = models.PositiveIntegerField(verbose_name=_("seq"))
    from_state = models.CharField(max_length=64, verbose_name=_("from state"))
    to_state = models.CharField(max_length=64, verbose_name=_("to state"))
    kind = models.CharField(
        max_length=16, choices=TransitionKind.choices, default=TransitionKind.MOVE, verbose_name=_("kind")
    )
    actor = models.CharField(
        max_length=128, help_text=_("The agent, or system:<what> for sweeps and policies."), verbose_name=_("actor")
    )
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    # Unconstrained like Anomaly.decision: the log is partitioned on PostgreSQL.
    decision = models.ForeignKey(
        "rules.DecisionRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="transitions",
        db_constraint=False,
        verbose_name=_("decision"),
    )
    idempotency_key = models.CharField(max_length=200, blank=True, verbose_name=_("idempotency key"))
    request_digest = models.CharField(max_length=64, blank=True, verbose_name=_("request digest"))
    # The fields this move set (null: cleared), personal data already masked: written masked, so no
    # reader of the timeline (agent API, admin) can show what it never stored.
    fields_changed = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Fields this move set; values of personal-data fields are masked."),
        verbose_name=_("fields changed"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    sequence_id = SequenceIdField(
        verbose_name=_("sequence id"), help_text=_("Its place in the order of everything the service records.")
    )

    class Meta:
        verbose_name = _("transition")
        verbose_name_plural = _("transitions")
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
        indexes = [models.Index(fields=["session", "sequence_id"], name="transition_session_seq_idx")]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.seq}: {self.from_state} → {self.to_state}"

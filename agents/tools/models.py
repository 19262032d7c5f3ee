"""Governed tool calls: each operation an agent asks to run, its attempts, and each tool's breaker.

An operation (``ToolCall``) is named by its ``operation_id`` and lives through its attempts: the first
call, each retry the error policy allows, and the result that ends it. Attempts are written once when
they start and completed once when their result comes. Neither is configuration (the contracts are,
``rules.config.models.tools``), so neither is audited by simple-history; a person's manual change of a
breaker is recorded as a ``BreakerChange`` (who, what, why).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Session
from decision_service.sequence import SequenceIdField


class ToolCallStatus(models.TextChoices):
    AWAITING_APPROVAL = "awaiting_approval", _("awaiting approval")
    APPROVED = "approved", _("approved")
    REJECTED = "rejected", _("rejected")
    RUNNING = "running", _("attempt in flight")
    RETRY_WAIT = "retry_wait", _("waiting to retry")
    DONE = "done", _("done")
    GAVE_UP = "gave_up", _("gave up")


class ToolCall(models.Model):
    """One operation: a tool the agent asked to call with one input, from one state of one session."""

    operation_id = models.CharField(max_length=64, verbose_name=_("operation id"))
    # No index of their own (db_index=False): the unique (agent, operation_id) and the (session, state,
    # status) index lead with these columns and serve their look-ups and the deletes that follow them.
    # Every index is one more entry per check (bench/RESULTS.md, "The check's PostgreSQL time").
    agent = models.ForeignKey(
        AgentRuntime, on_delete=models.PROTECT, related_name="tool_calls", verbose_name=_("agent"), db_index=False
    )
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="tool_calls", verbose_name=_("session"), db_index=False
    )
    tool = models.CharField(max_length=64, verbose_name=_("tool"))
    state = models.CharField(
        max_length=64, help_text=_("The session's state when the call was asked for."), verbose_name=_("state")
    )
    revision = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("revision"))
    risk = models.CharField(max_length=16, verbose_name=_("risk"))
    # Masked like facts before it is stored; the digest of the input as sent tells a repeat from a reuse.
    input = models.JSONField(default=dict, blank=True, verbose_name=_("input"))
    input_digest = models.CharField(max_length=64, verbose_name=_("input digest"))
    status = models.CharField(max_length=24, choices=ToolCallStatus.choices, verbose_name=_("status"))
    attempt = models.PositiveIntegerField(default=0, help_text=_("Attempts started so far."), verbose_name=_("attempt"))
    # Between retries: the next attempt may not start before it, nor may another operation of this
    # session in this state (the retry lease).
    retry_at = models.DateTimeField(null=True, blank=True, verbose_name=_("retry at"))
    deadline = models.DateTimeField(null=True, blank=True, verbose_name=_("deadline"))
    # The answer to the last reported result, given again when the same result is reported again.
    answer = models.JSONField(null=True, blank=True, verbose_name=_("answer"))
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The person who approved or rejected the call."),
        verbose_name=_("decided by"),
        db_index=False,  # tool_call_decided_by_idx: partial, most calls have no decider
    )
    decision_note = models.TextField(blank=True, verbose_name=_("decision note"))
    decided_at = models.DateTimeField(null=True, blank=True, verbose_name=_("decided at"))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "operation_id"], name="tool_call_operation_unique_per_agent")
        ]
        indexes = [
            models.Index(fields=["session", "state", "status"], name="tool_call_session_state_idx"),
            # Only the calls a person decided: a user's deletion (SET_NULL) finds them; a check writes no entry.
            models.Index(fields=["decided_by"], condition=Q(decided_by__isnull=False), name="tool_call_decided_by_idx"),
        ]
        permissions = [("approve_tool_calls", "Can approve and reject tool calls that wait for a person")]

    def __str__(self) -> str:
        return f"{self.tool} {self.operation_id} ({self.status})"


class AttemptOutcome(models.TextChoices):
    IN_FLIGHT = "", _("in flight")
    OK = "ok", _("ok")
    ERROR = "error", _("error")
    OUTPUT_INVALID = "output_invalid", _("output refused by its schema")


class ToolAttempt(models.Model):
    """One attempt of an operation: started when the check let it go ahead, completed by its result."""

    # No index of its own: the unique (call, attempt) leads with it.
    call = models.ForeignKey(
        ToolCall, on_delete=models.CASCADE, related_name="attempts", verbose_name=_("call"), db_index=False
    )
    attempt = models.PositiveIntegerField(verbose_name=_("attempt"))
    tool = models.CharField(max_length=64, verbose_name=_("tool"))
    started_at = models.DateTimeField(verbose_name=_("started at"))
    deadline = models.DateTimeField(verbose_name=_("deadline"))
    breaker_state = models.CharField(
        max_length=16,
        blank=True,
        help_text=_("The tool's breaker when the attempt started."),
        verbose_name=_("breaker"),
    )
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    outcome = models.CharField(
        max_length=16, choices=AttemptOutcome.choices, blank=True, default="", verbose_name=_("outcome")
    )
    error_code = models.CharField(max_length=64, blank=True, verbose_name=_("error code"))
    declared = models.BooleanField(
        default=True, help_text=_("Whether the contract declares the error code."), verbose_name=_("declared")
    )
    message = models.TextField(blank=True, verbose_name=_("message"))  # masked
    output_summary = models.TextField(blank=True, verbose_name=_("output summary"))  # masked, cut short
    duration_ms = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("duration (ms)"))
    sequence_id = SequenceIdField(
        verbose_name=_("sequence id"), help_text=_("Its place in the order of everything the service records.")
    )
    result_sequence_id = SequenceIdField(
        stamp_on="finished_at",
        verbose_name=_("result sequence id"),
        help_text=_("The result's place in the order of everything the service records (set when it came)."),
    )

    class Meta:
        verbose_name = _("tool attempt")
        verbose_name_plural = _("tool attempts")
        ordering = ["call", "attempt"]
        constraints = [models.UniqueConstraint(fields=["call", "attempt"], name="tool_attempt_unique_per_call")]
        # Read by tool and a time since (the breakers' recent failures), so only finished attempts: an
        # attempt is written unfinished by its check, which then writes no entry here. No query reads
        # attempts by ``finished_at`` alone (that index is gone).
        indexes = [
            models.Index(
                fields=["tool", "finished_at"],
                condition=Q(finished_at__isnull=False),
                name="tool_attempt_tool_finished_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool} #{self.attempt} ({self.outcome or 'in flight'})"


class ToolBreaker(models.Model):
    """A tool's circuit breaker and in-flight calls when no Redis is configured (``agents.tools.gate``);
    its row is also the lock every check of the tool takes then."""

    tool = models.CharField(max_length=64, unique=True, verbose_name=_("tool"))
    state = models.CharField(max_length=16, default="closed", verbose_name=_("state"))
    opened_at_ms = models.BigIntegerField(null=True, blank=True, verbose_name=_("opened at (ms)"))
    trials_left = models.PositiveIntegerField(default=0, verbose_name=_("trial calls left"))
    # Failure times (epoch ms) within the window, and in-flight leases {lease: deadline ms}.
    failures = models.JSONField(default=list, blank=True, verbose_name=_("failures"))
    in_flight = models.JSONField(default=dict, blank=True, verbose_name=_("in flight"))
    forced = models.BooleanField(
        default=False, help_text=_("Opened by a person: stays open until a person closes it."), verbose_name=_("forced")
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("tool breaker")
        verbose_name_plural = _("tool breakers")

    def __str__(self) -> str:
        return f"{self.tool}: {self.state}"


class BreakerChange(models.Model):
    """A person opening or closing a tool's breaker by hand: who, when and why."""

    tool = models.CharField(max_length=64, db_index=True, verbose_name=_("tool"))
    action = models.CharField(max_length=16, verbose_name=_("action"))  # "open" | "close"
    actor = models.CharField(max_length=128, verbose_name=_("actor"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    reason = models.TextField(verbose_name=_("reason"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("breaker change")
        verbose_name_plural = _("breaker changes")
        ordering = ["-created_at"]
        permissions = [("operate_breakers", "Can open and close tool circuit breakers by hand")]

    def __str__(self) -> str:
        return f"{self.tool}: {self.action} by {self.actor}"

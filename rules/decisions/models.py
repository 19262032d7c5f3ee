"""The decision log: every answered decision, candidate versus final, with what it was decided under.

Rows are written once, in the request's transaction, and never updated; they name points, rules and
agents by key so the log still reads after configuration is deleted. The agent runtime is kept as plain
values (its id and its name, which never changes), not a foreign key: agent runtimes belong to the
``agents`` app, which builds on this one.

On PostgreSQL the log's table is partitioned by month on ``created_at`` (migration 0015,
``rules.decisions.partitions``). PostgreSQL requires every unique index of a partitioned table to hold
the partition key, so there the primary key is ``(id, created_at)`` while Django keeps ``id`` as the
primary key it knows: ids are random UUIDs, unique on their own, and are what URLs and the API name.
For the same reason the "one Idempotency-Key per agent" rule lives in its own table
(``DecisionIdempotencyKey``), and rows elsewhere point at decisions without a database constraint.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from decision_service.sequence import SequenceIdField


class RuledBy(models.TextChoices):
    HARD_RULE = "hard_rule", _("hard rule")
    LLM_CANDIDATE = "llm_candidate", _("LLM candidate")
    DEFAULT = "default", _("default")


class DecisionRecord(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name=_("id"))
    created_at = models.DateTimeField(db_index=True, verbose_name=_("created at"))
    point = models.CharField(max_length=64, verbose_name=_("point"))
    agent_id = models.BigIntegerField(
        null=True, blank=True, help_text=_("The agent runtime's id."), verbose_name=_("agent id")
    )
    agent_name = models.CharField(max_length=64, verbose_name=_("agent name"))
    session_id = models.CharField(max_length=128, blank=True, verbose_name=_("session id"))
    input = models.TextField(
        blank=True, help_text=_("The user's input, with personal data masked."), verbose_name=_("input")
    )
    masked = models.JSONField(
        default=dict, blank=True, help_text=_("What was masked: kind → count."), verbose_name=_("masked")
    )
    facts = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("The request's facts, with personal data masked."),
        verbose_name=_("facts"),
    )
    masked_facts = models.JSONField(
        default=dict,
        blank=True,
        help_text=_('What was masked in the facts, by location: {"paths": [...], "patterns": {location: [kinds]}}.'),
        verbose_name=_("masked facts"),
    )
    session_state = models.CharField(max_length=64, blank=True, verbose_name=_("session state"))
    candidate_decision = models.CharField(max_length=128, blank=True, verbose_name=_("candidate decision"))
    candidate_confidence = models.FloatField(null=True, blank=True, verbose_name=_("candidate confidence"))
    candidate_reason = models.TextField(blank=True, verbose_name=_("candidate reason"))
    candidate_raw = models.TextField(
        blank=True, help_text=_("The model's raw text, when the agent sent it."), verbose_name=_("candidate raw")
    )
    decision = models.CharField(max_length=64, verbose_name=_("decision"))
    ruled_by = models.CharField(max_length=16, choices=RuledBy.choices, verbose_name=_("ruled by"))
    rule_key = models.CharField(max_length=64, blank=True, verbose_name=_("rule key"))
    rule_priority = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("rule priority"))
    rule_category = models.CharField(max_length=16, blank=True, verbose_name=_("rule category"))
    matched_rules = models.JSONField(default=list, blank=True, verbose_name=_("matched rules"))
    keyword_hits = models.JSONField(default=dict, blank=True, verbose_name=_("keyword hits"))
    overridden = models.BooleanField(default=False, verbose_name=_("overridden"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    revision = models.PositiveIntegerField(verbose_name=_("revision"))
    engine = models.CharField(max_length=16, default="native", verbose_name=_("engine"))
    evaluated_us = models.PositiveIntegerField(default=0, verbose_name=_("evaluated us"))
    tokens_prompt = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("tokens prompt"))
    tokens_completion = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("tokens completion"))
    # Which model and prompt made the candidate (the agent's own names, not personal data): the decision
    # map breaks its rates down by them, so an upgrade shows as a new row (docs/report.md).
    llm_model = models.CharField(
        max_length=128, blank=True, help_text=_("The model the agent asked, as it names it."), verbose_name=_("model")
    )
    llm_prompt_version = models.CharField(
        max_length=64,
        blank=True,
        help_text=_("The version of the prompt the agent sent it."),
        verbose_name=_("prompt version"),
    )
    llm_latency_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("How long the model took to answer, in ms."),
        verbose_name=_("model latency (ms)"),
    )
    idempotency_key = models.CharField(max_length=200, blank=True, verbose_name=_("idempotency key"))
    request_digest = models.CharField(max_length=64, blank=True, verbose_name=_("request digest"))
    session_move = models.JSONField(
        null=True,
        blank=True,
        help_text=_("With apply=true: the session's move {from, state, seq} made with it."),
        verbose_name=_("session move"),
    )
    candidate_invalid = models.BooleanField(
        default=False,
        help_text=_("The raw model output held no valid candidate; the default was used."),
        verbose_name=_("candidate invalid"),
    )
    session_read = models.JSONField(
        default=dict,
        blank=True,
        help_text=_(
            "What the point's rules read of the session beyond its state: the fields (personal data masked) "
            "and the keyword lists of its latest decisions."
        ),
        verbose_name=_("session read"),
    )

    sequence_id = SequenceIdField(
        verbose_name=_("sequence id"), help_text=_("Its place in the order of everything the service records.")
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("decision")
        verbose_name_plural = _("decision log")
        constraints = [
            models.CheckConstraint(condition=models.Q(ruled_by__in=RuledBy.values), name="decision_ruled_by_valid"),
        ]
        indexes = [
            models.Index(fields=["point", "-created_at"], name="decision_point_time_idx"),
            # A session's decisions in the service-wide order (its timeline, read after a sequence id).
            models.Index(fields=["session_id", "sequence_id"], name="decision_session_seq_idx"),
            models.Index(fields=["decision", "-created_at"], name="decision_outcome_time_idx"),
            models.Index(fields=["ruled_by", "-created_at"], name="decision_ruled_by_time_idx"),
            models.Index(fields=["agent_id", "-created_at"], name="decision_agent_time_idx"),
            # A session's latest overruled decisions, read with the session on every decide that names one
            # (its feedback hints): without it the planner ANDs two bitmaps over thousands of rows.
            models.Index(
                fields=["session_id", "-created_at"],
                condition=models.Q(overridden=True, ruled_by="hard_rule"),
                name="decision_session_overruled_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.point} → {self.decision} ({self.ruled_by})"


class DecisionIdempotencyKey(models.Model):
    """An agent's Idempotency-Key and the write made under it: one key per agent, for every write of the
    agent API (a decision, a session's move, interrupt, resume, reported anomaly), race-safe.

    A unique index on the (partitioned) log would have to include ``created_at``, which a retry does not
    know, so uniqueness is kept here. A decide that carries a key inserts this row and the log row in one
    transaction; of two requests racing with one key, the second waits on this table's unique index and
    then fails, and answers with the first one's decision. ``created_at`` is the write's, so the
    retention sweep finds the keys of a month it drops without reading the month.

    A decision's row names it (``decision``; the request's digest is on the log row). Any other write's
    row has no decision: ``operation`` says what it was, ``request_digest`` what was asked, and ``target``
    what to answer a retry from — the agents app writes and reads those (``rules.decisions.idempotency``),
    rules does not interpret them. One table, so a key used for one write is refused for any other.
    """

    agent_id = models.BigIntegerField(help_text=_("The agent runtime's id."), verbose_name=_("agent id"))
    key = models.CharField(max_length=200, verbose_name=_("idempotency key"))
    decision = models.OneToOneField(
        DecisionRecord,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="idempotency",
        verbose_name=_("decision"),
    )
    # Database defaults: the decide path's hand-written INSERT names only the decision's columns.
    operation = models.CharField(max_length=32, db_default="decision", verbose_name=_("operation"))
    request_digest = models.CharField(max_length=64, blank=True, db_default="", verbose_name=_("request digest"))
    target = models.JSONField(null=True, blank=True, verbose_name=_("target"))
    created_at = models.DateTimeField(db_index=True, verbose_name=_("created at"))

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent_id", "key"], name="decision_idempotency_key_unique_per_agent")
        ]
        verbose_name = _("decision idempotency key")
        verbose_name_plural = _("decision idempotency keys")

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.key}"


class CandidateRequestCount(models.Model):
    """How often a point answered "ask your LLM" (``needs_candidate``): not decisions, but counted."""

    point = models.CharField(max_length=64, verbose_name=_("point"))
    agent_id = models.BigIntegerField(help_text=_("The agent runtime's id."), verbose_name=_("agent id"))
    agent_name = models.CharField(max_length=64, default="", verbose_name=_("agent name"))
    day = models.DateField(verbose_name=_("day"))
    count = models.PositiveIntegerField(default=0, verbose_name=_("count"))

    class Meta:
        verbose_name = _("candidate request count")
        verbose_name_plural = _("candidate request counts")
        constraints = [
            models.UniqueConstraint(fields=["point", "agent_id", "day"], name="candidate_request_count_unique")
        ]

    def __str__(self) -> str:
        return f"{self.point} {self.day}: {self.count}"

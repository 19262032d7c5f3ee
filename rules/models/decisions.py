"""The decision log: every answered decision, candidate versus final, with what it was decided under.

Rows are written once, in the request's transaction, and never updated; they name points, rules and
agents by key so the log still reads after configuration is deleted. The agent runtime is kept as plain
values (its id and its name, which never changes), not a foreign key: agent runtimes belong to the
``agents`` app, which builds on this one.

On PostgreSQL the log's table is partitioned by month on ``created_at`` (migration 0015,
``rules.services.partitions``). PostgreSQL requires every unique index of a partitioned table to hold
the partition key, so there the primary key is ``(id, created_at)`` while Django keeps ``id`` as the
primary key it knows: ids are random UUIDs, unique on their own, and are what URLs and the API name.
For the same reason the "one Idempotency-Key per agent" rule lives in its own table
(``DecisionIdempotencyKey``), and rows elsewhere point at decisions without a database constraint.
"""

from __future__ import annotations

import uuid

from django.db import models


class RuledBy(models.TextChoices):
    HARD_RULE = "hard_rule", "hard rule"
    LLM_CANDIDATE = "llm_candidate", "LLM candidate"
    DEFAULT = "default", "default"


class DecisionRecord(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(db_index=True)
    point = models.CharField(max_length=64)
    agent_id = models.BigIntegerField(null=True, blank=True, help_text="The agent runtime's id.")
    agent_name = models.CharField(max_length=64)
    session_id = models.CharField(max_length=128, blank=True)
    input = models.TextField(blank=True, help_text="The user's input, with personal data masked.")
    masked = models.JSONField(default=dict, blank=True, help_text="What was masked: kind → count.")
    facts = models.JSONField(default=dict, blank=True, help_text="The request's facts, with personal data masked.")
    masked_facts = models.JSONField(
        default=dict,
        blank=True,
        help_text='What was masked in the facts, by location: {"paths": [...], "patterns": {location: [kinds]}}.',
    )
    session_state = models.CharField(max_length=64, blank=True)
    candidate_decision = models.CharField(max_length=128, blank=True)
    candidate_confidence = models.FloatField(null=True, blank=True)
    candidate_reason = models.TextField(blank=True)
    candidate_raw = models.TextField(blank=True, help_text="The model's raw text, when the agent sent it.")
    decision = models.CharField(max_length=64)
    ruled_by = models.CharField(max_length=16, choices=RuledBy.choices)
    rule_key = models.CharField(max_length=64, blank=True)
    rule_priority = models.PositiveIntegerField(null=True, blank=True)
    rule_category = models.CharField(max_length=16, blank=True)
    matched_rules = models.JSONField(default=list, blank=True)
    keyword_hits = models.JSONField(default=dict, blank=True)
    overridden = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    revision = models.PositiveIntegerField()
    engine = models.CharField(max_length=16, default="native")
    evaluated_us = models.PositiveIntegerField(default=0)
    tokens_prompt = models.PositiveIntegerField(null=True, blank=True)
    tokens_completion = models.PositiveIntegerField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    request_digest = models.CharField(max_length=64, blank=True)
    session_move = models.JSONField(
        null=True, blank=True, help_text="With apply=true: the session's move {from, state, seq} made with it."
    )
    candidate_invalid = models.BooleanField(
        default=False, help_text="The raw model output held no valid candidate; the default was used."
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "decision"
        verbose_name_plural = "decision log"
        constraints = [
            models.CheckConstraint(condition=models.Q(ruled_by__in=RuledBy.values), name="decision_ruled_by_valid"),
        ]
        indexes = [
            models.Index(fields=["point", "-created_at"], name="decision_point_time_idx"),
            models.Index(fields=["session_id", "created_at"], name="decision_session_idx"),
            models.Index(fields=["decision", "-created_at"], name="decision_outcome_time_idx"),
            models.Index(fields=["ruled_by", "-created_at"], name="decision_ruled_by_time_idx"),
            models.Index(fields=["agent_id", "-created_at"], name="decision_agent_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.point} → {self.decision} ({self.ruled_by})"


class DecisionIdempotencyKey(models.Model):
    """An agent's Idempotency-Key and the decision logged under it: one key per agent, race-safe.

    A unique index on the (partitioned) log would have to include ``created_at``, which a retry does not
    know, so uniqueness is kept here. A decide that carries a key inserts this row and the log row in one
    transaction; of two requests racing with one key, the second waits on this table's unique index and
    then fails, and answers with the first one's decision. ``created_at`` is the decision's, so the
    retention sweep finds the keys of a month it drops without reading the month.
    """

    agent_id = models.BigIntegerField(help_text="The agent runtime's id.")
    key = models.CharField(max_length=200)
    decision = models.OneToOneField(
        DecisionRecord, on_delete=models.CASCADE, db_constraint=False, related_name="idempotency"
    )
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent_id", "key"], name="decision_idempotency_key_unique_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.key}"


class CandidateRequestCount(models.Model):
    """How often a point answered "ask your LLM" (``needs_candidate``): not decisions, but counted."""

    point = models.CharField(max_length=64)
    agent_id = models.BigIntegerField(help_text="The agent runtime's id.")
    agent_name = models.CharField(max_length=64, default="")
    day = models.DateField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["point", "agent_id", "day"], name="candidate_request_count_unique")
        ]

    def __str__(self) -> str:
        return f"{self.point} {self.day}: {self.count}"

"""What the decision-point map keeps between requests: daily rollups of the decision log, and the
fortnightly snapshots of the map (docs/report.md).

Both are derived records, not configuration: they are recomputed, never edited, so they are not audited.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class DecisionRollupDay(models.Model):
    """One closed day (in ``time_zone``) whose rollups are built. Its presence is what tells a day with
    no decisions (a marker without rows) from a day nobody rolled up yet (no marker: counted directly)."""

    day = models.DateField()
    time_zone = models.CharField(max_length=64, help_text="The TIME_ZONE the day's bounds were taken in.")
    start = models.DateTimeField(help_text="The day's first moment (inclusive).")
    end = models.DateTimeField(help_text="The next day's first moment (exclusive).")
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "time_zone"], name="decision_rollup_day_unique")]
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"{self.day} ({self.time_zone})"


class DecisionRollup(models.Model):
    """The counts of one decision point on one rolled-up day (the report's traffic fields)."""

    rollup_day = models.ForeignKey(DecisionRollupDay, on_delete=models.CASCADE, related_name="rollups")
    point = models.CharField(max_length=64)
    decisions = models.PositiveIntegerField(default=0)
    hard_rule = models.PositiveIntegerField(default=0)
    llm_candidate = models.PositiveIntegerField(default=0)
    default = models.PositiveIntegerField(default=0)
    with_candidate = models.PositiveIntegerField(default=0)
    overridden = models.PositiveIntegerField(default=0)
    llm_calls_avoided = models.PositiveIntegerField(default=0)
    needs_candidate = models.PositiveIntegerField(default=0)
    tokens_prompt = models.BigIntegerField(default=0)
    tokens_completion = models.BigIntegerField(default=0)
    anomalies = models.JSONField(default=dict, blank=True, help_text="Anomaly code → count.")
    rule_hits = models.JSONField(default=dict, blank=True, help_text="Rule key → decisions in which it held.")
    rule_decided = models.JSONField(default=dict, blank=True, help_text="Rule key → decisions it made.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rollup_day", "point"], name="decision_rollup_point_unique")]

    def __str__(self) -> str:
        return f"{self.point} {self.rollup_day}"


class SnapshotTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Celery beat"
    COMMAND = "command", "manage.py decision_map --snapshot"


class DecisionMapSnapshot(models.Model):
    """The decision-point map as it was at ``taken_at`` (the report's JSON, whole)."""

    taken_at = models.DateTimeField(db_index=True)
    days = models.PositiveSmallIntegerField()
    trigger = models.CharField(max_length=16, choices=SnapshotTrigger.choices)
    taken_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    report = models.JSONField()
    mailed_at = models.DateTimeField(null=True, blank=True, help_text="When it was e-mailed to staff.")
    mailed_to = models.PositiveIntegerField(default=0, help_text="How many staff addresses it was e-mailed to.")

    class Meta:
        ordering = ["-taken_at", "-pk"]
        get_latest_by = ["taken_at", "pk"]

    def __str__(self) -> str:
        return f"decision-point map of {self.taken_at:%Y-%m-%d %H:%M}"

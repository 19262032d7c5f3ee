"""What the decision-point map keeps between requests: daily rollups of the decision log, and the
fortnightly snapshots of the map (docs/report.md).

Both are derived records, not configuration: they are recomputed, never edited, so they are not audited.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class DecisionRollupDay(models.Model):
    """One closed day (in ``time_zone``) whose rollups are built. Its presence is what tells a day with
    no decisions (a marker without rows) from a day nobody rolled up yet (no marker: counted directly)."""

    day = models.DateField(verbose_name=_("day"))
    time_zone = models.CharField(
        max_length=64, help_text=_("The TIME_ZONE the day's bounds were taken in."), verbose_name=_("time zone")
    )
    start = models.DateTimeField(help_text=_("The day's first moment (inclusive)."), verbose_name=_("start"))
    end = models.DateTimeField(help_text=_("The next day's first moment (exclusive)."), verbose_name=_("end"))
    computed_at = models.DateTimeField(verbose_name=_("computed at"))

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "time_zone"], name="decision_rollup_day_unique")]
        ordering = ["-day"]
        verbose_name = _("rolled-up day")
        verbose_name_plural = _("rolled-up days")

    def __str__(self) -> str:
        return f"{self.day} ({self.time_zone})"


class DecisionRollup(models.Model):
    """The counts of one decision point on one rolled-up day (the report's traffic fields)."""

    rollup_day = models.ForeignKey(
        DecisionRollupDay, on_delete=models.CASCADE, related_name="rollups", verbose_name=_("rolled-up day")
    )
    point = models.CharField(max_length=64, verbose_name=_("point"))
    decisions = models.PositiveIntegerField(default=0, verbose_name=_("decisions"))
    hard_rule = models.PositiveIntegerField(default=0, verbose_name=_("by hard rule"))
    llm_candidate = models.PositiveIntegerField(default=0, verbose_name=_("by LLM candidate"))
    default = models.PositiveIntegerField(default=0, verbose_name=_("by default"))
    with_candidate = models.PositiveIntegerField(default=0, verbose_name=_("with a candidate"))
    overridden = models.PositiveIntegerField(default=0, verbose_name=_("overridden"))
    llm_calls_avoided = models.PositiveIntegerField(default=0, verbose_name=_("LLM calls avoided"))
    needs_candidate = models.PositiveIntegerField(default=0, verbose_name=_("needing a candidate"))
    tokens_prompt = models.BigIntegerField(default=0, verbose_name=_("tokens prompt"))
    tokens_completion = models.BigIntegerField(default=0, verbose_name=_("tokens completion"))
    anomalies = models.JSONField(
        default=dict, blank=True, help_text=_("Anomaly code → count."), verbose_name=_("anomalies")
    )
    rule_hits = models.JSONField(
        default=dict, blank=True, help_text=_("Rule key → decisions in which it held."), verbose_name=_("rule hits")
    )
    rule_decided = models.JSONField(
        default=dict, blank=True, help_text=_("Rule key → decisions it made."), verbose_name=_("rule decided")
    )
    by_llm = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Per model and prompt version: decisions, with a candidate, overridden, anomalies."),
        verbose_name=_("by model"),
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rollup_day", "point"], name="decision_rollup_point_unique")]
        verbose_name = _("daily rollup")
        verbose_name_plural = _("daily rollups")

    def __str__(self) -> str:
        return f"{self.point} {self.rollup_day}"


class SnapshotTrigger(models.TextChoices):
    SCHEDULE = "schedule", _("Celery beat")
    COMMAND = "command", _("manage.py decision_map --snapshot")


class DecisionMapSnapshot(models.Model):
    """The decision-point map as it was at ``taken_at`` (the report's JSON, whole)."""

    taken_at = models.DateTimeField(db_index=True, verbose_name=_("taken at"))
    days = models.PositiveSmallIntegerField(verbose_name=_("days"))
    trigger = models.CharField(max_length=16, choices=SnapshotTrigger.choices, verbose_name=_("trigger"))
    taken_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, verbose_name=_("taken by")
    )
    report = models.JSONField(verbose_name=_("report"))
    mailed_at = models.DateTimeField(
        null=True, blank=True, help_text=_("When it was e-mailed to staff."), verbose_name=_("mailed at")
    )
    mailed_to = models.PositiveIntegerField(
        default=0, help_text=_("How many staff addresses it was e-mailed to."), verbose_name=_("mailed to")
    )

    class Meta:
        ordering = ["-taken_at", "-pk"]
        get_latest_by = ["taken_at", "pk"]
        verbose_name = _("decision-point map snapshot")
        verbose_name_plural = _("decision-point map snapshots")

    def __str__(self) -> str:
        return f"decision-point map of {self.taken_at:%Y-%m-%d %H:%M}"

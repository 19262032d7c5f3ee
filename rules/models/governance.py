"""Change requests: high-risk configuration changes waiting for a second person, and what happened to them.

A change request holds the exact proposed change — every record it adds, changes or removes, with the
record's document before and after — the revision it was made against, its author and reason. It is
written only by ``rules.services.change_requests``; the live configuration changes only when a request
is applied, as one new revision whose history rows name the request.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ChangeRequestState(models.TextChoices):
    PENDING = "pending", "pending approval"
    APPROVED = "approved", "approved, waiting for its time"
    APPLIED = "applied", "applied"
    REJECTED = "rejected", "rejected"
    WITHDRAWN = "withdrawn", "withdrawn"
    SUPERSEDED = "superseded", "superseded"


OPEN_STATES = (ChangeRequestState.PENDING, ChangeRequestState.APPROVED)


class ChangeRequestRisk(models.TextChoices):
    HIGH = "high", "high"
    LOW = "low", "low"


class ImpactStatus(models.TextChoices):
    NONE = "", "not computed"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ChangeRequest(models.Model):
    state = models.CharField(max_length=16, choices=ChangeRequestState.choices, default=ChangeRequestState.PENDING)
    risk = models.CharField(max_length=8, choices=ChangeRequestRisk.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="change_requests"
    )
    author_name = models.CharField(max_length=150, help_text="Who proposed it (kept if the user is deleted).")
    reason = models.CharField(max_length=500)
    base_revision = models.PositiveIntegerField(help_text="The revision the change was made against.")
    changes = models.JSONField(help_text="The record changes: action, kind, key, point, before and after.")
    risks = models.JSONField(default=list, blank=True, help_text="Why it needs approval: record and reason.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    apply_at = models.DateTimeField(null=True, blank=True, help_text="When to apply it once approved (empty: at once).")
    applied_at = models.DateTimeField(null=True, blank=True)
    applied_revision = models.PositiveIntegerField(null=True, blank=True)
    superseded_by = models.JSONField(
        null=True, blank=True, help_text="The record that changed since the request was made, and the revision."
    )
    failure = models.TextField(blank=True, help_text="Why the last attempt to apply it failed.")
    override_reason = models.TextField(
        blank=True, help_text="Why it was approved although it breaks pinned regression cases."
    )
    break_glass_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    break_glass_reason = models.TextField(blank=True)
    review_acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    review_acknowledged_at = models.DateTimeField(null=True, blank=True)
    impact = models.JSONField(default=dict, blank=True, help_text="The proposal replayed against logged decisions.")
    impact_status = models.CharField(max_length=16, choices=ImpactStatus.choices, default="", blank=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("approve_changerequest", "Can approve or reject change requests"),
            ("break_glass_changerequest", "Can apply a change request at once (break glass)"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=ChangeRequestState.values), name="change_request_state_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(risk__in=ChangeRequestRisk.values), name="change_request_risk_valid"
            ),
        ]
        indexes = [models.Index(fields=["state", "created_at"], name="change_request_state_idx")]

    def __str__(self) -> str:
        return f"change request {self.pk} ({self.state})"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def review_open(self) -> bool:
        """Applied by break glass and not yet looked at by a second person."""
        return self.break_glass_by_id is not None and self.review_acknowledged_at is None


class ChangeRequestApproval(models.Model):
    change_request = models.ForeignKey(ChangeRequest, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["change_request", "user"], name="change_request_one_approval_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} approved {self.change_request_id}"


class ChangeRequestEvent(models.Model):
    """One step in a request's life (created, edited, approved, …): the request's own audit trail."""

    change_request = models.ForeignKey(ChangeRequest, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    user_name = models.CharField(max_length=150, blank=True)
    kind = models.CharField(max_length=32)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} ({self.change_request_id})"


class RegressionCase(models.Model):
    """A logged decision pinned with the outcome it must keep: checked against every proposal and by
    ``manage.py check_regressions``."""

    point = models.CharField(max_length=64)
    input = models.TextField(blank=True, help_text="As logged (personal data masked).")
    facts = models.JSONField(default=dict, blank=True)
    session_state = models.CharField(max_length=64, blank=True)
    candidate_decision = models.CharField(max_length=128, blank=True)
    candidate_confidence = models.FloatField(null=True, blank=True)
    candidate_invalid = models.BooleanField(default=False)
    keyword_hits = models.JSONField(default=dict, blank=True, help_text="Hits recorded when it was decided.")
    masked = models.JSONField(default=dict, blank=True)
    masked_facts = models.JSONField(default=dict, blank=True, help_text="What was masked in the facts (as logged).")
    decided_at = models.DateTimeField(
        null=True, blank=True, help_text="The clock the case is decided at (the logged time); empty: now."
    )
    expected = models.CharField(max_length=64, help_text="The outcome the configuration must keep giving.")
    note = models.TextField(blank=True)
    decision_id = models.UUIDField(null=True, blank=True, help_text="The logged decision it was pinned from.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["point", "pk"]

    def __str__(self) -> str:
        return f"regression case {self.pk}: {self.point} → {self.expected}"

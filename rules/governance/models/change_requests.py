"""Change requests: high-risk configuration changes waiting for a second person, and what happened to them.

A change request holds the exact proposed change — every record it adds, changes or removes, with the
record's document before and after — the revision it was made against, its author and reason. It is
written only by ``rules.governance.change_requests``; the live configuration changes only when a request
is applied, as one new revision whose history rows name the request.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class ChangeRequestState(models.TextChoices):
    PENDING = "pending", _("pending approval")
    APPROVED = "approved", _("approved, waiting for its time")
    APPLIED = "applied", _("applied")
    REJECTED = "rejected", _("rejected")
    WITHDRAWN = "withdrawn", _("withdrawn")
    SUPERSEDED = "superseded", _("superseded")


OPEN_STATES = (ChangeRequestState.PENDING, ChangeRequestState.APPROVED)


class ChangeRequestRisk(models.TextChoices):
    HIGH = "high", _("high")
    LOW = "low", _("low")


class ImpactStatus(models.TextChoices):
    NONE = "", _("not computed")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class ChangeRequest(models.Model):
    state = models.CharField(
        max_length=16, choices=ChangeRequestState.choices, default=ChangeRequestState.PENDING, verbose_name=_("state")
    )
    risk = models.CharField(max_length=8, choices=ChangeRequestRisk.choices, verbose_name=_("risk"))
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="change_requests",
        verbose_name=_("author"),
    )
    author_name = models.CharField(
        max_length=150, help_text=_("Who proposed it (kept if the user is deleted)."), verbose_name=_("author name")
    )
    reason = models.CharField(max_length=500, verbose_name=_("reason"))
    base_revision = models.PositiveIntegerField(
        help_text=_("The revision the change was made against."), verbose_name=_("base revision")
    )
    changes = models.JSONField(
        help_text=_("The record changes: action, kind, key, point, before and after."), verbose_name=_("changes")
    )
    risks = models.JSONField(
        default=list, blank=True, help_text=_("Why it needs approval: record and reason."), verbose_name=_("risks")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    apply_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("When to apply it once approved (empty: at once)."),
        verbose_name=_("apply at"),
    )
    applied_at = models.DateTimeField(null=True, blank=True, verbose_name=_("applied at"))
    applied_revision = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("applied revision"))
    superseded_by = models.JSONField(
        null=True,
        blank=True,
        help_text=_("The record that changed since the request was made, and the revision."),
        verbose_name=_("superseded by"),
    )
    failure = models.TextField(
        blank=True, help_text=_("Why the last attempt to apply it failed."), verbose_name=_("failure")
    )
    override_reason = models.TextField(
        blank=True,
        help_text=_("Why it was approved although it breaks pinned regression cases."),
        verbose_name=_("override reason"),
    )
    break_glass_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("break glass by"),
    )
    break_glass_reason = models.TextField(blank=True, verbose_name=_("break glass reason"))
    review_acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("review acknowledged by"),
    )
    review_acknowledged_at = models.DateTimeField(null=True, blank=True, verbose_name=_("review acknowledged at"))
    impact = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("The proposal replayed against logged decisions."),
        verbose_name=_("impact"),
    )
    impact_status = models.CharField(
        max_length=16, choices=ImpactStatus.choices, default="", blank=True, verbose_name=_("impact status")
    )

    class Meta:
        verbose_name = _("change request")
        verbose_name_plural = _("change requests")
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
        return gettext("change request %(number)s (%(state)s)") % {"number": self.pk, "state": self.get_state_display()}

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def review_open(self) -> bool:
        """Applied by break glass and not yet looked at by a second person."""
        return self.break_glass_by_id is not None and self.review_acknowledged_at is None


class ChangeRequestApproval(models.Model):
    change_request = models.ForeignKey(
        ChangeRequest, on_delete=models.CASCADE, related_name="approvals", verbose_name=_("change request")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("user")
    )
    at = models.DateTimeField(auto_now_add=True, verbose_name=_("at"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))

    class Meta:
        verbose_name = _("change request approval")
        verbose_name_plural = _("change request approvals")
        ordering = ["at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["change_request", "user"], name="change_request_one_approval_per_user")
        ]

    def __str__(self) -> str:
        return gettext("%(user)s approved %(number)s") % {"user": self.user, "number": self.change_request_id}


class ChangeRequestEvent(models.Model):
    """One step in a request's life (created, edited, approved, …): the request's own audit trail."""

    change_request = models.ForeignKey(
        ChangeRequest, on_delete=models.CASCADE, related_name="events", verbose_name=_("change request")
    )
    at = models.DateTimeField(auto_now_add=True, verbose_name=_("at"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    user_name = models.CharField(max_length=150, blank=True, verbose_name=_("user name"))
    kind = models.CharField(max_length=32, verbose_name=_("kind"))
    detail = models.TextField(blank=True, verbose_name=_("detail"))
    # What Arbiter itself says about the step, as a message key and its values (rendered in the reader's
    # language when shown); ``detail`` holds only what a person typed. Rows from before have it empty.
    params = models.JSONField(default=dict, blank=True, verbose_name=_("parameters"))

    class Meta:
        verbose_name = _("change request event")
        verbose_name_plural = _("change request events")
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} ({self.change_request_id})"


class RegressionCase(models.Model):
    """A logged decision pinned with the outcome it must keep: checked against every proposal and by
    ``manage.py check_regressions``."""

    point = models.CharField(max_length=64, verbose_name=_("point"))
    input = models.TextField(blank=True, help_text=_("As logged (personal data masked)."), verbose_name=_("input"))
    facts = models.JSONField(default=dict, blank=True, verbose_name=_("facts"))
    session_state = models.CharField(max_length=64, blank=True, verbose_name=_("session state"))
    candidate_decision = models.CharField(max_length=128, blank=True, verbose_name=_("candidate decision"))
    candidate_confidence = models.FloatField(null=True, blank=True, verbose_name=_("candidate confidence"))
    candidate_invalid = models.BooleanField(default=False, verbose_name=_("candidate invalid"))
    keyword_hits = models.JSONField(
        default=dict, blank=True, help_text=_("Hits recorded when it was decided."), verbose_name=_("keyword hits")
    )
    session_read = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("What the rules read of the session, as logged (personal data masked)."),
        verbose_name=_("session read"),
    )
    masked = models.JSONField(default=dict, blank=True, verbose_name=_("masked"))
    masked_facts = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("What was masked in the facts (as logged)."),
        verbose_name=_("masked facts"),
    )
    decided_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("The clock the case is decided at (the logged time); empty: now."),
        verbose_name=_("decided at"),
    )
    expected = models.CharField(
        max_length=64, help_text=_("The outcome the configuration must keep giving."), verbose_name=_("expected")
    )
    note = models.TextField(blank=True, verbose_name=_("note"))
    decision_id = models.UUIDField(
        null=True, blank=True, help_text=_("The logged decision it was pinned from."), verbose_name=_("decision id")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )

    class Meta:
        verbose_name = _("regression case")
        verbose_name_plural = _("regression cases")
        ordering = ["point", "pk"]

    def __str__(self) -> str:
        return gettext("regression case %(number)s: %(point)s → %(outcome)s") % {
            "number": self.pk,
            "point": self.point,
            "outcome": self.expected,
        }

"""Agent runtimes: who may call Arbiter, with a hashed bearer token, the points it may ask and its rate limit."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.models.fields import key_validator
from rules.models import DecisionPoint


class AgentRuntime(models.Model):
    """An agent runtime calling the API with a bearer token. Only a hash of the token is kept."""

    name = models.CharField(max_length=64, validators=[key_validator], verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    token_hash = models.CharField(max_length=64, unique=True, editable=False, verbose_name=_("token hash"))
    token_prefix = models.CharField(
        max_length=16,
        editable=False,
        help_text=_("The first characters of the token, to recognise it."),
        verbose_name=_("token prefix"),
    )
    points = models.ManyToManyField(DecisionPoint, blank=True, related_name="agents", verbose_name=_("points"))
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    # Per-agent rate limit, a token bucket (agents.runtimes.ratelimit): ``rate_per_minute`` requests a minute on
    # average, up to ``rate_burst`` at once. No rate: no limit.
    rate_per_minute = models.PositiveIntegerField(
        _("requests per minute"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("How many API requests a minute this agent may send on average; empty for no limit."),
    )
    rate_burst = models.PositiveIntegerField(
        _("burst"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "How many requests it may send at once before the rate applies; empty for a minute's worth "
            "(the rate per minute)."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    history = HistoricalRecords(excluded_fields=["token_hash"], m2m_fields=[points])

    class Meta:
        verbose_name = _("agent runtime")
        verbose_name_plural = _("agent runtimes")
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

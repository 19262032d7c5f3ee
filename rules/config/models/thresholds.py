"""Thresholds: one named number that rules refer to by key. Audited with django-simple-history; writes
go through ``rules.config.records``."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.models.fields import key_field, text_problems
from rules.config.validators import bounds_text, threshold_problems


class Threshold(models.Model):
    """A named number that rules refer to by key, so operations change one number in one place."""

    key = key_field(_("Rules refer to the threshold by this key; it cannot change later."))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    value = models.DecimalField(max_digits=18, decimal_places=6, verbose_name=_("value"))
    unit = models.CharField(
        max_length=32, blank=True, help_text=_("For people: CNY, seconds, ratio…"), verbose_name=_("unit")
    )
    min_value = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True, verbose_name=_("min value"))
    max_value = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True, verbose_name=_("max value"))
    high_risk = models.BooleanField(
        default=False,
        help_text=_(
            "Changing a high-risk threshold's value, bounds or this flag waits for a second person's approval."
        ),
        verbose_name=_("high risk"),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("threshold")
        verbose_name_plural = _("thresholds")
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="threshold_key_unique"),
            models.CheckConstraint(
                condition=Q(min_value__isnull=True) | Q(max_value__isnull=True) | Q(min_value__lte=F("max_value")),
                name="threshold_bounds_ordered",
            ),
            models.CheckConstraint(
                condition=Q(min_value__isnull=True) | Q(value__gte=F("min_value")), name="threshold_value_ge_min"
            ),
            models.CheckConstraint(
                condition=Q(max_value__isnull=True) | Q(value__lte=F("max_value")), name="threshold_value_le_max"
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def bounds_text(self) -> str:
        return bounds_text(self.min_value, self.max_value, self.unit)

    def clean(self) -> None:
        errors = text_problems(self)
        errors.update(
            threshold_problems(value=self.value, min_value=self.min_value, max_value=self.max_value, unit=self.unit)
        )
        if errors:
            raise ValidationError(errors)

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ConfigRevision(models.Model):
    """An immutable snapshot of the whole configuration the engine needs, numbered monotonically.

    Created only by ``rules.config.revisions``; decisions record the number they were made under
    so that any decision can be replayed under exactly the configuration it saw.
    """

    number = models.PositiveIntegerField(unique=True, verbose_name=_("number"))
    snapshot = models.JSONField(verbose_name=_("snapshot"))
    digest = models.CharField(
        max_length=64, help_text=_("SHA-256 of the canonical snapshot JSON."), verbose_name=_("digest")
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
    reason = models.CharField(max_length=500, blank=True, verbose_name=_("reason"))

    class Meta:
        verbose_name = _("config revision")
        verbose_name_plural = _("config revisions")
        ordering = ["-number"]
        constraints = [models.CheckConstraint(condition=models.Q(number__gte=1), name="revision_number_positive")]

    def __str__(self) -> str:
        return f"revision {self.number}"

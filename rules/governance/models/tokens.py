"""API tokens of staff users, for automation (a team that proposes configuration from its git, a
script that works the human queue). Only a hash is kept; the token is shown once when made."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class StaffToken(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_token", verbose_name=_("user")
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False, verbose_name=_("token hash"))
    token_prefix = models.CharField(max_length=16, editable=False, verbose_name=_("token prefix"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name_plural = _("staff API tokens")
        verbose_name = _("staff API token")

    def __str__(self) -> str:
        return f"{self.token_prefix}… ({self.user})"

"""Drift between an upstream MCP server's tools and their approved contracts, as the gateway saw it.

One row per episode: an upstream tool whose definition (input schema, output schema, the risk its
annotations give) differs from its approved contract ``server.tool`` — or that has no contract — opens
a drift; the change request proposing the contract made from the upstream's definition is filed with it.
At most one drift of a tool is open at a time (a partial unique index, so that the many gateway threads
and processes that see the same drift at once record it once). Written only by
``rules.governance.mcp_drift``; its status changes are kept in its history.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords


class McpDriftKind(models.TextChoices):
    NEW = "new", _("new tool")
    CHANGED = "changed", _("changed")


class McpDriftStatus(models.TextChoices):
    OPEN = "open", _("open")
    ADOPTED = "adopted", _("adopted")
    RESOLVED = "resolved", _("resolved")


class McpToolDrift(models.Model):
    server = models.CharField(max_length=32, verbose_name=_("MCP server"))
    tool = models.CharField(
        max_length=128, help_text=_("As the server names it (without the namespace)."), verbose_name=_("tool")
    )
    kind = models.CharField(max_length=8, choices=McpDriftKind.choices, verbose_name=_("kind"))
    upstream = models.JSONField(
        help_text=_("The tool as the server's tools/list described it."), verbose_name=_("upstream definition")
    )
    fingerprint = models.CharField(max_length=64, verbose_name=_("fingerprint"))
    approved = models.JSONField(null=True, blank=True, verbose_name=_("approved contract"))
    proposed = models.JSONField(null=True, blank=True, verbose_name=_("proposed contract"))
    problem = models.TextField(blank=True, verbose_name=_("problem"))
    first_seen = models.DateTimeField(verbose_name=_("first seen"))
    last_seen = models.DateTimeField(verbose_name=_("last seen"))
    status = models.CharField(
        max_length=8, choices=McpDriftStatus.choices, default=McpDriftStatus.OPEN, verbose_name=_("status")
    )
    change_request = models.ForeignKey(
        "rules.ChangeRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("change request"),
    )
    history = HistoricalRecords(excluded_fields=["last_seen"])

    class Meta:
        verbose_name = _("MCP tool drift")
        verbose_name_plural = _("MCP tool drifts")
        ordering = ["-last_seen", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "tool"], condition=Q(status="open"), name="mcp_tool_drift_one_open"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.server}.{self.tool}"

    @property
    def contract_name(self) -> str:
        return f"{self.server}.{self.tool}"

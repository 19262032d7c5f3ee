"""Upstream MCP servers the gateway forwards tool calls to. Audited with django-simple-history, part of
every revision; writes go through ``rules.config.mcp_servers``. No column holds a secret: ``auth_secret_env``
names the environment variable the gateway reads it from (``rules.config.mcp_server_definitions``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.mcp_server_definitions import (
    DEFAULT_REFRESH_S,
    DEFAULT_TIMEOUT_MS,
    REFRESH_BOUNDS,
    TIMEOUT_BOUNDS,
    URL_MAX,
    mcp_server_problems,
)
from rules.config.models.fields import text_problems


class McpAuthKind(models.TextChoices):
    NONE = "none", _("none")
    BEARER = "bearer", _("bearer token")
    HEADER = "header", _("header")


# A field of the document → the column the problem is shown on.
_COLUMN = {"auth": "auth_kind", "kind": "auth_kind", "header": "auth_header", "secret_env": "auth_secret_env"}


class McpServer(models.Model):
    """One upstream MCP server: its namespace, streamable HTTP endpoint, authentication and timings."""

    name = models.CharField(
        max_length=32,
        help_text=_("The namespace of its tools: the contract orders.query_order is the tool query_order of orders."),
        verbose_name=_("name"),
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    url = models.CharField(
        max_length=URL_MAX, help_text=_("The server's streamable HTTP endpoint (http or https)."), verbose_name=_("URL")
    )
    auth_kind = models.CharField(
        max_length=8, choices=McpAuthKind.choices, default=McpAuthKind.NONE, verbose_name=_("authentication")
    )
    auth_header = models.CharField(
        max_length=64,
        blank=True,
        help_text=_("For authentication by header: the header's name."),
        verbose_name=_("auth header"),
    )
    auth_secret_env = models.CharField(
        max_length=128,
        blank=True,
        help_text=_("The environment variable the gateway reads the secret from; the secret itself is never stored."),
        verbose_name=_("secret's environment variable"),
    )
    timeout_ms = models.PositiveIntegerField(default=DEFAULT_TIMEOUT_MS, verbose_name=_("timeout (ms)"))
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    tools_refresh_s = models.PositiveIntegerField(
        default=DEFAULT_REFRESH_S,
        help_text=_("How often each gateway process reads the server's tools/list again."),
        verbose_name=_("tools refresh (s)"),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("MCP server")
        verbose_name_plural = _("MCP servers")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["name"], name="mcp_server_name_unique"),
            models.CheckConstraint(
                condition=Q(timeout_ms__gte=TIMEOUT_BOUNDS[0], timeout_ms__lte=TIMEOUT_BOUNDS[1]),
                name="mcp_server_timeout_bounds",
            ),
            models.CheckConstraint(
                condition=Q(tools_refresh_s__gte=REFRESH_BOUNDS[0], tools_refresh_s__lte=REFRESH_BOUNDS[1]),
                name="mcp_server_refresh_bounds",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def auth_document(self) -> dict[str, Any]:
        auth: dict[str, Any] = {"kind": self.auth_kind}
        if self.auth_header:
            auth["header"] = self.auth_header
        if self.auth_secret_env:
            auth["secret_env"] = self.auth_secret_env
        return auth

    def document(self) -> dict[str, Any]:
        """The server as written in a configuration document (before it is made canonical)."""
        return {
            "name": self.name,
            "description": self.description,
            "url": self.url,
            "auth": self.auth_document(),
            "timeout_ms": self.timeout_ms,
            "enabled": self.enabled,
            "tools_refresh_s": self.tools_refresh_s,
        }

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        for at, message in mcp_server_problems(self.document()).items():
            errors.setdefault(_COLUMN.get(str(at[-1]), str(at[0])), []).append(message)
        for name, message in text_problems(self).items():
            errors.setdefault(name, []).append(message)
        if errors:
            raise ValidationError(errors)

"""Tool contracts: what a tool takes and answers, how its failures are handled, and how risky calling it is.
Audited with django-simple-history, part of every revision; writes go through ``rules.config.tools``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.models.fields import text_problems
from rules.config.models.machines import StateMachine
from rules.config.tool_definitions import DEFAULT_TIMEOUT_MS, HANDOFF, tool_problems


class ToolRisk(models.TextChoices):
    READ_ONLY = "read_only", _("read only")
    WRITE = "write", _("write")
    DESTRUCTIVE = "destructive", _("destructive")


def _handoff() -> str:
    return HANDOFF


class ToolContract(models.Model):
    """One tool an agent may call: its schemas, error policy, limits, breaker, risk and approval states."""

    name = models.CharField(
        max_length=64,
        help_text=_("As the agent and the MCP server name the tool; machines' actions name it too."),
        verbose_name=_("name"),
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    input_schema = models.JSONField(
        default=dict, help_text=_("JSON Schema 2020-12 of a call's input."), verbose_name=_("input schema")
    )
    output_schema = models.JSONField(
        null=True,
        blank=True,
        help_text=_("JSON Schema 2020-12 of the tool's answer; empty: not checked."),
        verbose_name=_("output schema"),
    )
    error_codes = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Each error code the tool may answer: code, description, retryable, max_retries, backoff."),
        verbose_name=_("error codes"),
    )
    on_exhausted = models.JSONField(
        default=_handoff,
        help_text=_("When retries run out: handoff, {event: an event} or {state: a state}."),
        verbose_name=_("on exhausted"),
    )
    timeout_ms = models.PositiveIntegerField(
        default=DEFAULT_TIMEOUT_MS, validators=[MinValueValidator(1)], verbose_name=_("timeout (ms)")
    )
    max_concurrent = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Calls in flight at once across every worker; empty: no limit."),
        verbose_name=_("max concurrent"),
    )
    circuit_breaker = models.JSONField(
        null=True,
        blank=True,
        help_text=_("failure_threshold, window_s, half_open_after_ms, trial_calls; empty: no breaker."),
        verbose_name=_("circuit breaker"),
    )
    risk = models.CharField(max_length=16, choices=ToolRisk.choices, verbose_name=_("risk"))
    needs_approval_in = models.JSONField(
        default=list,
        blank=True,
        help_text=_("States in which a call waits for a person's approval."),
        verbose_name=_("needs approval in"),
    )
    history = HistoricalRecords()

    class Meta:
        verbose_name = _("tool contract")
        verbose_name_plural = _("tool contracts")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["name"], name="tool_contract_name_unique"),
            models.CheckConstraint(condition=Q(timeout_ms__gte=1), name="tool_contract_timeout_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def document(self) -> dict[str, Any]:
        """The contract as written in a configuration document (before it is made canonical)."""
        document: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "error_codes": self.error_codes,
            "on_exhausted": self.on_exhausted,
            "timeout_ms": self.timeout_ms,
            "max_concurrent": self.max_concurrent,
            "circuit_breaker": self.circuit_breaker,
            "risk": self.risk,
            "needs_approval_in": self.needs_approval_in,
        }
        return document

    def clean(self) -> None:
        machines = {
            m.key: {"states": m.states, "actions": m.actions, "events": m.events} for m in StateMachine.objects.all()
        }
        errors: dict[str, list[str]] = {}
        for at, message in tool_problems(self.document(), machines=machines).items():
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in at[1:]).lstrip(".")
            errors.setdefault(str(at[0]), []).append(f"{where}: {message}" if where else message)
        for name, message in text_problems(self).items():
            errors.setdefault(name, []).append(message)
        if errors:
            raise ValidationError(errors)

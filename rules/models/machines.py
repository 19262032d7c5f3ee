"""State machines: how sessions of one kind may move. Audited configuration, part of every revision.

The model was first created by the ``agents`` app; its rows and history rows still live in the tables it
had there (``agents_statemachine``, ``agents_historicalstatemachine``), so moving it lost nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from rules.machines import machine_problems
from rules.models.config import DecisionPoint, key_validator, text_problems


class StateMachine(models.Model):
    """States, allowed transitions, per-state action whitelists and timeouts for one kind of session."""

    key = models.CharField(max_length=64, validators=[key_validator])
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    states = models.JSONField(default=list)
    initial_state = models.CharField(max_length=64)
    handoff_state = models.CharField(max_length=64, help_text="Where sessions go for a human to take over.")
    terminal_states = models.JSONField(default=list, blank=True)
    transitions = models.JSONField(default=dict, help_text="State → the states it may move to.")
    actions = models.JSONField(default=dict, blank=True, help_text="State → the action types allowed in it.")
    timeouts = models.JSONField(default=dict, blank=True, help_text="State → seconds before a sweep hands it off.")
    max_anomalies = models.PositiveIntegerField(
        default=3,
        validators=[MinValueValidator(1)],
        help_text="Model anomalies in one session before it is handed to a human.",
    )
    history = HistoricalRecords(table_name="agents_historicalstatemachine")

    class Meta:
        db_table = "agents_statemachine"
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="state_machine_key_unique"),
            models.CheckConstraint(condition=Q(max_anomalies__gte=1), name="state_machine_max_anomalies_positive"),
        ]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        from rules.signals import machine_checking

        problems = machine_problems(
            states=self.states,
            initial_state=self.initial_state,
            handoff_state=self.handoff_state,
            terminal_states=self.terminal_states,
            transitions=self.transitions,
            actions=self.actions,
            timeouts=self.timeouts,
        )
        if not problems and self.key:
            declared = set(self.states)
            relying = []
            for point in DecisionPoint.objects.filter(machine=self.key):
                missing = sorted(
                    {s for s in point.state_map.values() if s not in declared}
                    | ({point.fallback_state} - declared - {""})
                )
                if missing:
                    relying.append(f"{point.key} ({', '.join(missing)})")
            if relying:
                problems["states"] = f"Decision points still move sessions to these states: {'; '.join(relying)}."
            if self.pk:
                # What runs on the machine (sessions, in the agents app) may refuse the change too.
                answers: list[tuple[Any, Any]] = machine_checking.send(sender=StateMachine, machine=self)
                for _, answer in answers:
                    for name, message in (answer or {}).items():
                        problems[name] = message
        problems = {**text_problems(self), **problems}
        if problems:
            raise ValidationError(problems)

"""State machines: how sessions of one kind may move. Audited configuration, part of every revision.

The model was first created by the ``agents`` app; its rows and history rows still live in the tables it
had there (``agents_statemachine``, ``agents_historicalstatemachine``), so moving it lost nothing.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from rules.config.event_definitions import machine_event_problems
from rules.config.field_definitions import machine_field_problems
from rules.config.machine_definitions import machine_problems
from rules.config.models.fields import key_validator, text_problems
from rules.config.models.points import DecisionPoint


class StateMachine(models.Model):
    """States, allowed transitions, per-state action whitelists and timeouts for one kind of session."""

    key = models.CharField(max_length=64, validators=[key_validator], verbose_name=_("key"))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    states = models.JSONField(default=list, verbose_name=_("states"))
    initial_state = models.CharField(max_length=64, verbose_name=_("initial state"))
    handoff_state = models.CharField(
        max_length=64, help_text=_("Where sessions go for a human to take over."), verbose_name=_("handoff state")
    )
    terminal_states = models.JSONField(default=list, blank=True, verbose_name=_("terminal states"))
    transitions = models.JSONField(
        default=dict, help_text=_("State → the states it may move to."), verbose_name=_("transitions")
    )
    actions = models.JSONField(
        default=dict, blank=True, help_text=_("State → the action types allowed in it."), verbose_name=_("actions")
    )
    timeouts = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("State → seconds before a sweep hands it off."),
        verbose_name=_("timeouts"),
    )
    max_anomalies = models.PositiveIntegerField(
        default=3,
        validators=[MinValueValidator(1)],
        help_text=_("Model anomalies in one session before it is handed to a human."),
        verbose_name=_("max anomalies"),
    )
    fields = models.JSONField(
        default=list,
        blank=True,
        help_text=_("What sessions of this machine hold: each field's name, type and constraints."),
        verbose_name=_("fields"),
    )
    events = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Named moves: each event's name, the states it may be sent in, its target and guard."),
        verbose_name=_("events"),
    )
    guards = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("State → target state → what an agent's move along that edge needs."),
        verbose_name=_("guards"),
    )
    history = HistoricalRecords(table_name="agents_historicalstatemachine")

    class Meta:
        verbose_name = _("state machine")
        verbose_name_plural = _("state machines")
        db_table = "agents_statemachine"
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["key"], name="state_machine_key_unique"),
            models.CheckConstraint(condition=Q(max_anomalies__gte=1), name="state_machine_max_anomalies_positive"),
        ]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        from rules.hooks import machine_checking

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
                problems["states"] = gettext("Decision points still move sessions to these states: %(points)s.") % {
                    "points": "; ".join(relying)
                }
            if self.pk:
                # What runs on the machine (sessions, in the agents app) may refuse the change too.
                for answer in machine_checking.ask(machine=self):
                    for name, message in (answer or {}).items():
                        problems[name] = message
        problems = {**text_problems(self), **problems}
        errors: dict[str, str | list[str]] = dict(problems)
        if field_problems := self._field_problems():
            errors["fields"] = field_problems
        for name, messages in self._event_problems().items():
            errors[name] = messages
        if errors:
            raise ValidationError(errors)

    def _field_problems(self) -> list[str]:
        """The field declarations' problems, each named by the field (or its place in the list) and key."""
        located = machine_field_problems(
            fields=self.fields,
            states=self.states if isinstance(self.states, list) else [],
            closed_states=[self.initial_state, self.handoff_state],
        )
        messages = []
        for at, message in located.items():
            if not at:
                messages.append(message)
                continue
            index, *key = at
            declaration = self.fields[int(index)]
            name = declaration.get("name") if isinstance(declaration, dict) else None
            where = name if isinstance(name, str) and name else gettext("field %(number)s") % {"number": int(index) + 1}
            messages.append(f"{where}{' ' + str(key[0]) if key else ''}: {message}")
        return messages

    def _event_problems(self) -> dict[str, list[str]]:
        """The events' and guards' problems by model field, each message prefixed by where it is."""
        located = machine_event_problems(
            events=self.events,
            guards=self.guards,
            states=self.states if isinstance(self.states, list) else [],
            transitions=self.transitions if isinstance(self.transitions, dict) else {},
            field_names=[
                f["name"] for f in self.fields or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
            ],
            points=dict(DecisionPoint.objects.values_list("key", "outcomes")),
            # An import writes machines before the points that name them; the document's checker has
            # checked those against the document's points.
            all_points=False,
        )
        messages: dict[str, list[str]] = {}
        for (field, *at), message in located.items():
            if field == "events" and at:
                event = self.events[int(at[0])]
                name = event.get("name") if isinstance(event, dict) else None
                label = (
                    name if isinstance(name, str) and name else gettext("event %(number)s") % {"number": int(at[0]) + 1}
                )
                where = [label, *map(str, at[1:])]
            else:
                # A guard is named by its edge: "from → to".
                where = [" → ".join(str(a) for a in at[:2]), *map(str, at[2:])] if at else []
            prefix = " ".join(where)
            messages.setdefault(str(field), []).append(f"{prefix}: {message}" if prefix else message)
        return messages

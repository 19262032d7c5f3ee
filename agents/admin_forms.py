"""Admin forms for agent runtimes and state machines: lists and mappings typed as lines, not JSON."""

from __future__ import annotations

from typing import Any

from django import forms

from agents.models import AgentRuntime, StateMachine
from rules.admin.fields import ListField, MappingField
from rules.admin.forms import AuditedModelForm


class AgentRuntimeForm(AuditedModelForm):
    class Meta:
        model = AgentRuntime
        fields = ["name", "description", "points", "is_active"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "name": "Lower-case letters, digits and underscores; it cannot change later.",
            "points": "The decision points this agent may ask.",
            "is_active": "An inactive agent's token is refused.",
        }


class StateMachineForm(AuditedModelForm):
    states = ListField(help_text="One state key per line, e.g. greeting, collecting, confirming, handoff, done.")
    terminal_states = ListField(help_text="States a session ends in, one per line. They have no way out.")
    transitions = MappingField(
        help_text="One line per state: “state: the states it may move to”, e.g. “collecting: confirming, handoff”. "
        "Every state must be reachable from the initial state."
    )
    actions = MappingField(
        help_text="One line per state: “state: the action types allowed in it”, e.g. “collecting: ask, lookup_order”."
    )
    timeouts = MappingField(
        numbers=True,
        help_text="One line per state: “state: seconds”, e.g. “waiting_for_user: 900”. "
        "A session left longer in the state is handed to a human.",
    )

    class Meta:
        model = StateMachine
        fields = [
            "key",
            "name",
            "description",
            "states",
            "initial_state",
            "handoff_state",
            "terminal_states",
            "transitions",
            "actions",
            "timeouts",
            "max_anomalies",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "key": "Sessions refer to the machine by this key; it cannot change later.",
            "initial_state": "Where every session starts; one of the states.",
            "handoff_state": "Where sessions go for a human to take over; one of the states.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Show the per-state lines in the order of the states (PostgreSQL's jsonb keeps no key order).
        order = {state: i for i, state in enumerate(self.initial.get("states") or [])}
        for name in ("transitions", "actions", "timeouts"):
            mapping = self.initial.get(name)
            if isinstance(mapping, dict):
                self.initial[name] = dict(sorted(mapping.items(), key=lambda item: order.get(item[0], len(order))))

"""Admin forms for configuration records: plain-text editing of JSON fields, and a reason for every change.

Forms convert text ↔ values and nothing more; what a value may be is decided by the model's
``clean()`` (which the form runs) and by the services (which run it again when saving).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.functional import lazy
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.fields import ListField, MappingField, PairsField, plain_number
from decision_service.admin.forms import AuditedModelForm
from rules.config.admin.event_fields import EventDeclarationsField, GuardsField
from rules.config.admin.fields import FactsField, FieldDeclarationsField, LiteralField
from rules.config.condition_kinds import ADAPTERS, INPUTS_USED, adapter, unused_inputs
from rules.config.models.points import point_view
from rules.engine.evasion import EVASION_OPTIONS
from rules.engine.masking import BUILTIN_PATTERNS
from rules.models import Condition, DecisionPoint, FactType, KeywordList, Rule, StateMachine, Threshold


def _plain_initial(form: forms.ModelForm, *names: str) -> None:
    """Show ``0.65`` rather than ``0.650000`` in decimal inputs."""
    for name in names:
        if form.initial.get(name) is not None:
            form.initial[name] = plain_number(form.initial[name])


class ThresholdForm(AuditedModelForm):
    class Meta:
        model = Threshold
        fields = ["key", "name", "description", "value", "unit", "min_value", "max_value", "high_risk"]
        labels = {"min_value": _("Lowest allowed value"), "max_value": _("Highest allowed value")}
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "min_value": _("Leave empty for no lower bound. The value can never be set below it."),
            "max_value": _("Leave empty for no upper bound. The value can never be set above it."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_initial(self, "value", "min_value", "max_value")
        if "value" in self.fields:
            if self.instance.pk:
                self.fields["value"].help_text = gettext("Allowed range: %(range)s. A value outside it is refused.") % {
                    "range": self.instance.bounds_text()
                }
            else:
                self.fields["value"].help_text = _("Must lie within the allowed range set below (if any).")


class KeywordListForm(AuditedModelForm):
    bulk_terms = forms.CharField(
        label=_("Add terms (paste)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 40, "placeholder": "refund\n退款\nchargeback"}),
        help_text=_(
            "Paste one term per line; they are added to the list when you save. Terms are stored normalised "
            "(full-width letters and digits become normal ones, upper case becomes lower case). If any pasted "
            "term is already in the list, nothing is added and the duplicates are named."
        ),
    )

    class Meta:
        model = KeywordList
        fields = [
            "key",
            "name",
            "description",
            "match_mode",
            "fold_traditional",
            "ignore_cjk_gaps",
            *EVASION_OPTIONS,
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "match_mode": _(
                "Substring: anywhere in the text. Whole word: not inside a longer word. Whole word, Chinese "
                "segmented: Chinese terms too count only as words of their own (报警器 is not 报警). Regular "
                "expression: each term is a pattern."
            )
        }

    def pasted_terms(self) -> list[str]:
        text = self.cleaned_data.get("bulk_terms") or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


def _fact_types_help() -> str:
    return ", ".join(f"{value} ({label})" if value != label else value for value, label in FactType.choices)


# The built-in masks (rules.engine.masking), named for people.
MASK_LABELS = {"id_card": _("ID card number"), "email": _("email address"), "phone": _("phone number")}


class DecisionPointForm(AuditedModelForm):
    facts = FactsField(
        label=_("Facts"),
        help_text=format_lazy(
            _("One fact per line as “name: type”, e.g. “refund_amount: number”. Types: {types}."),
            types=lazy(_fact_types_help, str)(),
        ),
    )
    outcomes = ListField(
        label=_("Outcomes"), help_text=_("One outcome key per line, e.g. approve, deny, handoff. At least one.")
    )
    candidate_whitelist = ListField(
        label=_("Candidate whitelist"),
        help_text=_("Outcomes an LLM may propose and have accepted, one per line. Each must be listed in outcomes."),
    )
    mask_skip = forms.MultipleChoiceField(
        label=_("Do not mask"),
        required=False,
        choices=[(name, MASK_LABELS.get(name, name.replace("_", " "))) for name in BUILTIN_PATTERNS],
        widget=forms.CheckboxSelectMultiple,
        help_text=_("Personal data is masked in the decision log; tick a kind only if this point needs it kept."),
    )
    machine = forms.ChoiceField(
        label=_("Machine"),
        required=False,
        help_text=_("The state machine whose sessions a decision at this point may move (decide with apply=true)."),
    )
    state_map = PairsField(
        example="human_handoff: human_handoff",
        label=_("Outcome → state"),
        help_text=_("One per line as “outcome: state”: where a session moves when the point decides that outcome."),
    )
    mask_patterns = PairsField(
        label=_("Also mask"),
        help_text=_("More personal data to mask in the log, one per line as “name: regular expression”."),
    )
    mask_facts = forms.BooleanField(
        label=_("Mask facts"),
        required=False,
        help_text=_(
            "Facts are masked in the log like the input (the kinds above, in every text value); "
            "untick only if this point needs its facts kept as sent."
        ),
    )
    mask_fact_paths = ListField(
        label=_("Always mask these facts"),
        help_text=_("Facts whose values are replaced whole in the log, one per line, e.g. customer_address."),
    )

    class Meta:
        model = DecisionPoint
        fields = [
            "key",
            "name",
            "description",
            "facts",
            "outcomes",
            "candidate_whitelist",
            "default_outcome",
            "no_candidate",
            "machine",
            "state_map",
            "fallback_state",
            "mask_skip",
            "mask_patterns",
            "mask_facts",
            "mask_fact_paths",
            "store_raw_output",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {"default_outcome": _("What happens when nothing else decides. Must be one of the outcomes.")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        machine = self.fields["machine"]
        assert isinstance(machine, forms.ChoiceField)
        machine.choices = [("", _("— none —"))] + [(k, k) for k in StateMachine.objects.values_list("key", flat=True)]


class RuleForm(AuditedModelForm):
    outcome = forms.ChoiceField(
        label=_("Outcome"), help_text=_("What the rule decides: one of the decision point's outcomes.")
    )

    class Meta:
        model = Rule
        fields = [
            "point",
            "key",
            "description",
            "priority",
            "category",
            "combinator",
            "outcome",
            "mode",
            "effective_from",
            "effective_until",
        ]
        widgets = {"description": forms.TextInput(attrs={"size": 80})}
        labels = {"combinator": _("Match when")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        outcome = self.fields["outcome"]
        assert isinstance(outcome, forms.ChoiceField)
        outcome.choices = self._outcome_choices()

    def _outcome_choices(self) -> list[Any]:
        point = self.instance.point if self.instance.point_id else None
        initial_point = str(self.initial.get("point") or "")
        if point is None and initial_point.isdigit() and not self.is_bound:
            point = DecisionPoint.objects.filter(pk=int(initial_point)).first()
        current = self.instance.outcome or ""
        blank = [("", "---------")]
        if point is not None:
            outcomes = list(point.outcomes or [])
            if current and current not in outcomes:
                outcomes.append(current)  # keep showing it; the model's clean() explains the problem
            return blank + [(o, o) for o in outcomes]
        # No point yet: group by point; rule_outcome.js shows only the chosen point's group.
        return blank + [(p.key, [(o, o) for o in p.outcomes or []]) for p in DecisionPoint.objects.order_by("key")]


class ConditionForm(forms.ModelForm):
    value = LiteralField(
        label=_("Value"),
        help_text=_(
            "Compare with this instead of a threshold: 500, 0.5, yes/no, some text, "
            "or for “in” a list such as: gold, platinum."
        ),
    )
    outcomes = ListField(one_per_line=False, label=_("Outcomes"), help_text=_("Outcome keys, separated by commas."))
    states = ListField(one_per_line=False, label=_("States"), help_text=_("Session state keys, separated by commas."))
    unless = ListField(
        label=_("Unless"),
        help_text=_(
            "Weak-signal phrases, one per line: a keyword inside one of them does not count "
            "(不是要投诉 keeps 投诉 in “我不是要投诉” from matching)."
        ),
    )

    class Meta:
        model = Condition
        fields = [
            "kind",
            "position",
            "keyword_list",
            "unless",
            "unless_negated",
            "fact",
            "operator",
            "threshold",
            "value",
            "outcomes",
            "states",
            "window_start",
            "window_end",
            "timezone",
        ]
        widgets = {
            "position": forms.NumberInput(attrs={"style": "width: 5em"}),
            "fact": forms.TextInput(attrs={"size": 20}),
            "timezone": forms.TextInput(attrs={"size": 20, "placeholder": "Asia/Shanghai"}),
        }
        help_texts = {
            "position": _("Order in which conditions are shown and checked (lowest first)."),
            "fact": _("A fact declared by the decision point."),
            "threshold": _("Compare with a named threshold (or give a value instead)."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = adapter(self.instance.kind) if self.instance.pk else None
        if kind is not None:
            self.initial.update(kind.form_initial(self.instance))
        # condition_kind.js shows only the inputs of the chosen kind, with the kind's own help where it has one.
        attrs = self.fields["kind"].widget.attrs
        attrs["data-condition-inputs"] = json.dumps({k: list(names) for k, names in INPUTS_USED.items()})
        # Rendered per request, so the help follows the operator's language.
        attrs["data-condition-help"] = json.dumps(
            {k: {name: str(text) for name, text in a.help_texts.items()} for k, a in ADAPTERS.items() if a.help_texts}
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        kind = adapter(cleaned.get("kind") or "")
        if kind is not None:
            cleaned.update(unused_inputs(kind.kind))
            kind.form_clean(cleaned, point_view(self.instance.rule.point if self.instance.rule_id else None))
        return cleaned


class StateMachineForm(AuditedModelForm):
    states = ListField(
        label=_("States"), help_text=_("One state key per line, e.g. greeting, collecting, confirming, handoff, done.")
    )
    terminal_states = ListField(
        label=_("Terminal states"), help_text=_("States a session ends in, one per line. They have no way out.")
    )
    transitions = MappingField(
        label=_("Transitions"),
        help_text=_(
            "One line per state: “state: the states it may move to”, e.g. “collecting: confirming, handoff”. "
            "Every state must be reachable from the initial state."
        ),
    )
    actions = MappingField(
        label=_("Actions"),
        help_text=_(
            "One line per state: “state: the action types allowed in it”, e.g. “collecting: ask, lookup_order”."
        ),
    )
    timeouts = MappingField(
        label=_("Timeouts"),
        numbers=True,
        help_text=_(
            "One line per state: “state: seconds”, e.g. “waiting_for_user: 900”. "
            "A session left longer in the state is handed to a human."
        ),
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
            "fields",
            "events",
            "guards",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        # Not a declared attribute like the fields above: on a form, ``fields`` is the form's own mapping of
        # fields, so the model field of that name gets its form field (and words) through Meta.
        field_classes = {"fields": FieldDeclarationsField, "events": EventDeclarationsField, "guards": GuardsField}
        labels = {"fields": _("Fields")}
        help_texts = {
            "events": _(
                "Named moves, as a YAML list, e.g. “- name: clarification_required” with “from: [executing]”, "
                "“to: collecting_params” and an optional “guard:”. Each from → to must be in the transitions."
            ),
            "guards": _(
                "What an agent's move along an edge needs, e.g. “collecting_params:”, then “executing:”, then "
                "“requires_fields: [receiver_phone]” or “requires_decision: {point: …, outcomes: [...]}”."
            ),
            "fields": _(
                "What sessions hold, as a YAML list, e.g. “- name: phone” with “type: string”, "
                "“pattern: '^1[3-9]\\d{9}$'”, “normalize: [digits]”, “required_in: [executing]”, “pii: true”. "
                "The keys are described in docs/config.md."
            ),
            "key": _("Sessions refer to the machine by this key; it cannot change later."),
            "initial_state": _("Where every session starts; one of the states."),
            "handoff_state": _("Where sessions go for a human to take over; one of the states."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Show the per-state lines in the order of the states (PostgreSQL's jsonb keeps no key order).
        order = {state: i for i, state in enumerate(self.initial.get("states") or [])}
        for name in ("transitions", "actions", "timeouts"):
            mapping = self.initial.get(name)
            if isinstance(mapping, dict):
                self.initial[name] = dict(sorted(mapping.items(), key=lambda item: order.get(item[0], len(order))))

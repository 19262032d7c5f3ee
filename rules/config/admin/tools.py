"""Tool contracts in the admin: schemas and policies edited as YAML, as in the configuration document."""

from __future__ import annotations

from typing import Any

import yaml
from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from decision_service.admin.forms import AuditedModelForm
from rules.config.admin.base import ConfigAdmin
from rules.config.revisions import Actor
from rules.config.tools import tool_delete, tool_save
from rules.models import ToolContract


class YamlValueField(forms.CharField):
    """Any YAML value (a schema, a list of error codes, ``handoff``), stored as JSON; empty text is
    ``empty``. What the value may be is the model's ``clean()``'s to say."""

    def __init__(self, *, empty: Any = None, rows: int = 8, **kwargs: Any) -> None:
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs["required"] = False
        kwargs["widget"] = forms.Textarea(attrs={"rows": rows, "cols": 60, "class": "arbiter-code"})
        self.empty = empty
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if value is None or value == self.empty:
            return ""
        if isinstance(value, str) and value.strip() and not isinstance(self.empty, str):
            return value  # text the form sent back, shown again as typed
        return yaml.safe_dump(value, allow_unicode=True, sort_keys=False).removesuffix("\n...\n")

    def to_python(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return self.empty
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark is not None else "?"
            raise ValidationError(
                gettext("Line %(line)s: this is not YAML the form can read.") % {"line": line}
            ) from error

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return initial != self.to_python(data)
        except ValidationError:
            return True


class ToolContractForm(AuditedModelForm):
    input_schema = YamlValueField(empty={}, rows=12, label=_("Input schema"))
    output_schema = YamlValueField(empty=None, rows=8, label=_("Output schema"))
    error_codes = YamlValueField(
        empty=[],
        rows=10,
        label=_("Error codes"),
        help_text=_(
            "A YAML list; each: code, description, retryable, max_retries, "
            "backoff (kind: fixed or exponential, base_ms, cap_ms, jitter)."
        ),
    )
    on_exhausted = YamlValueField(
        empty="handoff",
        rows=2,
        label=_("On exhausted"),
        help_text=_("handoff, “event: an event name” or “state: a state”."),
    )
    circuit_breaker = YamlValueField(
        empty=None,
        rows=4,
        label=_("Circuit breaker"),
        help_text=_("failure_threshold, window_s, half_open_after_ms, trial_calls, ignore_codes; empty: no breaker."),
    )
    needs_approval_in = YamlValueField(
        empty=[], rows=2, label=_("Needs approval in"), help_text=_("A YAML list of states, e.g. [confirming].")
    )

    class Meta:
        model = ToolContract
        fields = [
            "name",
            "description",
            "risk",
            "input_schema",
            "output_schema",
            "error_codes",
            "on_exhausted",
            "timeout_ms",
            "max_concurrent",
            "circuit_breaker",
            "needs_approval_in",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 60})}


@admin.register(ToolContract)
class ToolContractAdmin(ConfigAdmin):
    governance_kind = "tool"
    form = ToolContractForm
    list_display = ("name", "risk", "timeout_ms", "max_concurrent", "error_code_list")
    list_filter = ("risk",)
    search_fields = ("name", "description")
    fieldsets = [
        (None, {"fields": ["name", "description", "risk"]}),
        (_("Schemas"), {"fields": ["input_schema", "output_schema"]}),
        (_("Errors and retries"), {"fields": ["error_codes", "on_exhausted"]}),
        (_("Limits"), {"fields": ["timeout_ms", "max_concurrent", "circuit_breaker", "needs_approval_in"]}),
    ]

    def governance_key(self, obj: Any) -> tuple[str, str]:
        return obj.name, ""

    @admin.display(description=_("error codes"))
    def error_code_list(self, obj: ToolContract) -> str:
        return ", ".join(e.get("code", "?") for e in obj.error_codes if isinstance(e, dict))

    def save_record(self, obj: ToolContract, *, actor: Actor, reason: str) -> None:
        tool_save(tool=obj, actor=actor, reason=reason)

    def delete_record(self, obj: ToolContract, *, actor: Actor, reason: str) -> None:
        tool_delete(tool=obj, actor=actor, reason=reason)

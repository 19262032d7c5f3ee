"""Form fields for rule configuration: declared facts and the literals conditions compare with.

Each field turns text into the Python value the model stores (and back for display); what the value
*means* is still checked by the model's ``clean()``, so the admin and the services refuse the same
things with the same messages.
"""

from __future__ import annotations

from typing import Any

import yaml
from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from rules.config.field_definitions import canonical_field
from rules.config.literals import literal_tokens as literal_tokens
from rules.config.literals import parse_literal as parse_literal
from rules.config.literals import parse_literal_list as parse_literal_list
from rules.config.literals import show_literal


class FactsField(forms.CharField):
    """Declared facts as ``name: type`` lines; stored as a JSON mapping."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "cols": 40}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{name}: {typ}" for name, typ in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        if isinstance(value, dict):
            return value
        facts: dict[str, str] = {}
        for number, line in enumerate((super().to_python(value) or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, typ = line.partition(":")
            name, typ = name.strip(), typ.strip()
            if not sep or not name or not typ:
                raise ValidationError(
                    gettext("Line %(line)s: write the fact as “name: type”, e.g. “refund_amount: number”.")
                    % {"line": number}
                )
            if name in facts:
                raise ValidationError(
                    gettext("Line %(line)s: the fact %(fact)s is declared twice.") % {"line": number, "fact": name}
                )
            facts[name] = typ
        return facts

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)
        except ValidationError:
            return True


class LiteralField(forms.CharField):
    """A literal for a fact condition; the form turns the text into a value once it knows the operator.

    The form puts ``show_literal(instance.value)`` into its initial data, so a stored text ``"500"``
    is shown quoted and reads back as text, not as the number 500.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 24}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return value
        return show_literal(value)

    def has_changed(self, initial: Any, data: Any) -> bool:
        shown = initial if isinstance(initial, str) else show_literal(initial)
        return shown.strip() != (data or "").strip()


class YamlBlockField(forms.CharField):
    """A machine's block (fields, events, guards) as YAML text, as in the configuration document; stored as
    JSON. What it means is checked by the model's ``clean()``; here only that it is YAML of the right shape."""

    empty: Any = None
    rows = 10

    def __init__(self, **kwargs: Any) -> None:
        # The model's JSONField hands its JSON encoder and decoder to its form field; YAML text needs neither.
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs["required"] = False
        kwargs["widget"] = forms.Textarea(attrs={"rows": self.rows, "cols": 60, "class": "arbiter-code"})
        super().__init__(**kwargs)

    def shown(self, value: Any) -> Any:
        return value

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | dict):
            return yaml.safe_dump(self.shown(value), allow_unicode=True, sort_keys=False) if value else ""
        return value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list | dict):
            return value
        text = super().to_python(value) or ""
        if not text.strip():
            return type(self.empty)()
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark is not None else "?"
            raise ValidationError(
                gettext("Line %(line)s: this is not YAML the form can read.") % {"line": line}
            ) from error
        if not isinstance(loaded, type(self.empty)):
            raise ValidationError(self.shape_message())
        return self.shown(loaded)

    def shape_message(self) -> str:
        raise NotImplementedError

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)
        except ValidationError:
            return True


class FieldDeclarationsField(YamlBlockField):
    """A machine's field declarations (the ``fields:`` block), stored as a JSON list."""

    empty: Any = []
    rows = 12

    def shown(self, value: Any) -> Any:
        # In the document's key order: PostgreSQL's jsonb keeps no key order of its own.
        return [canonical_field(item) if isinstance(item, dict) else item for item in value]

    def shape_message(self) -> str:
        return gettext("Write the fields as a YAML list: each one starting with “- name: …”.")

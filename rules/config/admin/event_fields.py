"""The admin's YAML text inputs for a machine's events (a list) and guards (a mapping), as the ``events:``
and ``guards:`` blocks of the configuration document; what they mean is checked by the model's ``clean()``."""

from __future__ import annotations

from typing import Any

import yaml
from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from rules.config.event_definitions import canonical_event


class _YamlBlockField(forms.CharField):
    empty: Any = None

    def __init__(self, **kwargs: Any) -> None:
        # The model's JSONField hands its JSON encoder and decoder to its form field; YAML text needs neither.
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs["required"] = False
        kwargs["widget"] = forms.Textarea(attrs={"rows": 10, "cols": 60, "class": "arbiter-code"})
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


class EventDeclarationsField(_YamlBlockField):
    empty: Any = []

    def shown(self, value: Any) -> Any:
        # In the document's key order: PostgreSQL's jsonb keeps no key order of its own.
        return [canonical_event(item) if isinstance(item, dict) else item for item in value]

    def shape_message(self) -> str:
        return gettext("Write the events as a YAML list: each one starting with “- name: …”.")


class GuardsField(_YamlBlockField):
    empty: Any = {}

    def shape_message(self) -> str:
        return gettext("Write the guards as a YAML mapping: a state, then the state it moves to, then the guard.")

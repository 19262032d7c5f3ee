"""Form fields for rule configuration: declared facts and the literals conditions compare with.

Each field turns text into the Python value the model stores (and back for display); what the value
*means* is still checked by the model's ``clean()``, so the admin and the services refuse the same
things with the same messages.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError


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
                raise ValidationError(f"Line {number}: write the fact as “name: type”, e.g. “refund_amount: number”.")
            if name in facts:
                raise ValidationError(f"Line {number}: the fact {name} is declared twice.")
            facts[name] = typ
        return facts

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)
        except ValidationError:
            return True


_WORDS = {"true": True, "yes": True, "false": False, "no": False, "null": None}


def parse_literal(text: str) -> Any:
    """One literal typed by a person: ``500`` → 500, ``0.5`` → 0.5, ``yes``/``true`` → True,
    ``"500"`` → the text 500, anything else → that text."""
    text = text.strip()
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    try:
        value = json.loads(text, parse_constant=_not_a_literal)
    except ValueError:
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return text  # 1e999 overflows to infinity: not a number anyone meant
    return value


def _not_a_literal(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


_LIST_ITEM = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[^,\n]*?)\s*(?:[,\n]|$)')


def literal_tokens(text: str) -> list[str]:
    """``"a, b", c`` → ``['"a, b"', 'c']``: the items of a typed list, quotes kept."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    tokens = []
    for match in _LIST_ITEM.finditer(text):
        if match.start() == len(text):
            break
        if match.group(1):
            tokens.append(match.group(1))
    return tokens


def parse_literal_list(text: str) -> list[Any]:
    """``a, b`` / ``1, 2`` / ``"a, b", c`` / ``["a", "b"]`` → a list of literals."""
    text = text.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            return value if isinstance(value, list) else [value]
    return [parse_literal(token) for token in literal_tokens(text)]


def show_literal(value: Any) -> str:
    """The inverse of ``parse_literal``/``parse_literal_list`` for display in a text box."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_show_item(v) for v in value)
    return _show_item(value)


def _show_item(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # Quote text that would otherwise read back as a number, yes/no, or several items.
        if parse_literal(value) != value or "," in value or value != value.strip():
            return json.dumps(value, ensure_ascii=False)
        return value
    return json.dumps(value, ensure_ascii=False)


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

"""Form fields that let staff edit JSON-backed fields as plain text: lists, mappings and pairs.

Each field turns text into the Python value the model stores (and back for display); what the value
*means* is still checked by the model's ``clean()``, so the admin and the services refuse the same
things with the same messages.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext

_SEPARATORS = re.compile(r"[\n,]")


def split_items(text: str) -> list[str]:
    """``'a, b\\nc'`` → ``['a', 'b', 'c']``: commas and line breaks both separate, blanks are dropped."""
    return [item.strip() for item in _SEPARATORS.split(text or "") if item.strip()]


def plain_number(value: Decimal | int | float | None) -> str:
    """``Decimal('0.650000')`` → ``'0.65'``, ``Decimal('500.000000')`` → ``'500'``."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return str(value)


class ListField(forms.CharField):
    """A list of keys typed one per line (or separated by commas); stored as a JSON list."""

    def __init__(self, *, one_per_line: bool = True, **kwargs: Any) -> None:
        self.one_per_line = one_per_line
        kwargs.setdefault("required", False)
        if one_per_line:
            kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "cols": 40}))
        else:
            kwargs.setdefault("widget", forms.TextInput(attrs={"size": 40}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ("\n" if self.one_per_line else ", ").join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return value
        return split_items(super().to_python(value) or "")

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)


class MappingField(forms.CharField):
    """``state: a, b`` lines; each value is a list of names, or (``numbers=True``) one number."""

    def __init__(self, *, numbers: bool = False, **kwargs: Any) -> None:
        self.numbers = numbers
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 5, "cols": 60}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            lines = []
            for key, item in value.items():
                shown = ", ".join(str(v) for v in item) if isinstance(item, list | tuple) else str(item)
                lines.append(f"{key}: {shown}".rstrip())
            return "\n".join(lines)
        return value

    def to_python(self, value: Any) -> dict[str, Any]:  # type: ignore[override]
        if isinstance(value, dict):
            return value
        mapping: dict[str, Any] = {}
        example = "“waiting: 300”" if self.numbers else "“collecting: confirming, handoff”"
        for number, line in enumerate((super().to_python(value) or "").splitlines(), start=1):
            if not line.strip():
                continue
            key, sep, rest = line.partition(":")
            key = key.strip()
            if not sep or not key:
                raise ValidationError(
                    gettext("Line %(line)s: write “state: …”, e.g. %(example)s.") % {"line": number, "example": example}
                )
            if key in mapping:
                raise ValidationError(
                    gettext("Line %(line)s: %(name)s is listed twice.") % {"line": number, "name": key}
                )
            if self.numbers:
                mapping[key] = _number(rest.strip(), number)
            else:
                mapping[key] = split_items(rest.replace(",", "\n"))
        return mapping

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)
        except ValidationError:
            return True


class PairsField(forms.CharField):
    """``name: value`` lines (a mask's regular expression, an outcome's state); the value is taken as
    written after the first colon."""

    def __init__(self, *, example: str = r"order_no: E\d{10}", **kwargs: Any) -> None:
        self.example = example
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3, "cols": 60, "placeholder": example}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{name}: {pattern}" for name, pattern in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        if isinstance(value, dict):
            return value
        patterns: dict[str, str] = {}
        for number, line in enumerate((super().to_python(value) or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, pattern = line.partition(":")
            name, pattern = name.strip(), pattern.strip()
            if not sep or not name or not pattern:
                raise ValidationError(
                    gettext("Line %(line)s: write “name: value”, e.g. “%(example)s”.")
                    % {"line": number, "example": self.example}
                )
            if name in patterns:
                raise ValidationError(
                    gettext("Line %(line)s: %(name)s is listed twice.") % {"line": number, "name": name}
                )
            patterns[name] = pattern
        return patterns

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(self.prepare_value(initial) or "") != self.to_python(data)
        except ValidationError:
            return True


def _number(text: str, line: int) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValidationError(
            gettext("Line %(line)s: “%(text)s” is not a number of seconds.") % {"line": line, "text": text}
        ) from None

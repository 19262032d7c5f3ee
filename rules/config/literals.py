"""Literals as people type them in the admin, and back: ``500``, ``0.5``, ``yes``, ``"500"``, ``gold, platinum``.

Pure Python, no Django: the admin's form fields and the kinds of condition (``rules.config.condition_kinds``) use them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

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


def text_items(text: str) -> list[str]:
    """``gold, "a, b", 500`` → ``['gold', 'a, b', '500']``: every item of a list for a text fact is text."""
    items = []
    for token in literal_tokens(text):
        if token.startswith('"'):
            try:
                token = str(json.loads(token))
            except ValueError:
                token = token.strip('"')
        items.append(token)
    return items

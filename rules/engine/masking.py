"""Mask personal data in text before it is written to the decision log. Pure Python, no Django.

Built-in kinds cover what support conversations carry most: phone numbers (mainland mobile numbers,
with or without +86, and international numbers written with a leading +), e-mail addresses and
18-digit resident ID card numbers. A point may skip built-ins and add its own named patterns.
Patterns run on the NFKC form of the text, so full-width digits are caught as well.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

BUILTIN_PATTERNS: dict[str, str] = {
    # Order matters: an ID card number holds runs of digits a phone pattern could otherwise take.
    "id_card": r"(?<![0-9])[1-9][0-9]{16}[0-9xX](?![0-9])",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "phone": r"(?<![0-9+])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9])|\+[1-9][0-9 -]{7,17}[0-9]",
}


@dataclass(frozen=True, slots=True)
class Masked:
    text: str
    counts: dict[str, int]


class Masker:
    __slots__ = ("_patterns",)

    def __init__(self, *, skip: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> None:
        skipped = set(skip)
        patterns = [(name, p) for name, p in BUILTIN_PATTERNS.items() if name not in skipped]
        patterns += sorted((extra or {}).items())
        self._patterns = tuple((name, re.compile(p)) for name, p in patterns)

    def mask(self, text: str) -> Masked:
        if not text or not self._patterns:
            return Masked(text, {})
        normalized = unicodedata.normalize("NFKC", text)
        counts: dict[str, int] = {}
        for name, pattern in self._patterns:
            normalized, n = pattern.subn(f"[{name}]", normalized)
            if n:
                counts[name] = counts.get(name, 0) + n
        # Unmasked text is kept exactly as the user wrote it.
        return Masked(normalized if counts else text, counts)

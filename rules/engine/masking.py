"""Mask personal data in text before it is written to the decision log. Pure Python, no Django.

Built-in kinds cover what support conversations carry most: phone numbers (mainland mobile numbers,
with or without +86, and international numbers written with a leading +), e-mail addresses and
18-digit resident ID card numbers. A point may skip built-ins and add its own named patterns.
Patterns run on the NFKC form of the text, so full-width digits are caught as well.

Facts are masked with the same patterns (every string at any depth, and integers, whose digits may be a
phone or ID card number), and the values at the point's own fact paths are replaced whole. What was
masked is described by location and kind, never by value (``MaskedFacts.record``). A point may opt out
(``facts=False``): its facts are then logged as sent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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


# What a value named by one of the point's fact paths is replaced with.
WHOLE = "[masked]"


@dataclass(frozen=True, slots=True)
class MaskedFacts:
    """``facts`` as they may be logged; ``record`` says what was masked: ``{"paths": [locations masked
    whole], "patterns": {location: [kinds found]}}`` (``{}`` when nothing was). A location is the dotted
    path to the value, list items by index (``tags.1``)."""

    facts: dict[str, Any]
    record: dict[str, Any]


def masked_fact_names(record: Mapping[str, Any]) -> frozenset[str]:
    """The facts (top-level names) of which something was masked, read from a ``MaskedFacts.record``."""
    locations = list(record.get("paths", ())) + list(record.get("patterns", {}))
    return frozenset(str(location).split(".", 1)[0] for location in locations)


class Masker:
    __slots__ = ("_facts", "_paths", "_patterns")

    def __init__(
        self,
        *,
        skip: Iterable[str] = (),
        extra: Mapping[str, str] | None = None,
        fact_paths: Iterable[str] = (),
        facts: bool = True,
    ) -> None:
        skipped = set(skip)
        patterns = [(name, p) for name, p in BUILTIN_PATTERNS.items() if name not in skipped]
        patterns += sorted((extra or {}).items())
        self._patterns = tuple((name, re.compile(p)) for name, p in patterns)
        self._paths = frozenset(tuple(path.split(".")) for path in fact_paths)
        self._facts = facts

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

    def mask_facts(self, facts: Mapping[str, Any]) -> MaskedFacts:
        """Facts as they may be logged (see the module docstring)."""
        if not self._facts:
            return MaskedFacts(dict(facts), {})
        paths: list[str] = []
        found: dict[str, list[str]] = {}

        def walk(value: Any, keys: tuple[str, ...], where: tuple[str, ...]) -> Any:
            # ``keys``: the mapping keys on the way, which is what a fact path names (list items are
            # passed through, so ``orders.address`` names the address of every order).
            if keys in self._paths:
                paths.append(".".join(where))
                return WHOLE
            if isinstance(value, Mapping):
                return {k: walk(v, (*keys, str(k)), (*where, str(k))) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [walk(v, keys, (*where, str(i))) for i, v in enumerate(value)]
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                result = self.mask(value if isinstance(value, str) else str(value))
                if result.counts:
                    found[".".join(where)] = sorted(result.counts)
                    return result.text
            return value

        masked = {str(k): walk(v, (str(k),), (str(k),)) for k, v in facts.items()}
        record: dict[str, Any] = {}
        if paths:
            record["paths"] = sorted(paths)
        if found:
            record["patterns"] = dict(sorted(found.items()))
        return MaskedFacts(masked, record)

    @staticmethod
    def mask_fact_values(text: str, facts: Mapping[str, Any], masked: MaskedFacts) -> str:
        """``text`` (a decision's reason) with the masked facts' values as the reason's words show them
        (``name 'value'``, how a fact condition explains itself) replaced by their masked form."""
        for name in sorted(masked_fact_names(masked.record)):
            if name in facts:
                text = text.replace(f"{name} {facts[name]!r}", f"{name} {masked.facts.get(name)!r}")
        return text

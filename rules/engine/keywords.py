"""One pass over the input finds every keyword of every list a point uses.

Plain terms (substring and whole-word lists) go into one Aho–Corasick automaton. It is fed the UTF-8
bytes of the input, spelled as a latin-1 ``str`` (one char per byte): with thousands of CJK terms the
automaton then branches over at most 256 symbols instead of thousands, which measured ~15× faster
here than feeding the ``str`` itself. A ``re`` alternation of thousands of terms is far slower still
(3 ms p99), so regular expressions are kept for lists in regex mode only.

"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import ahocorasick

from rules.normalize import normalize_text

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def _as_bytes_str(text: str) -> str:
    return text.encode("utf-8").decode("latin-1")


@dataclass(frozen=True, slots=True)
class KeywordListSpec:
    key: str
    match: str  # substring | word | regex
    terms: tuple[str, ...]


class KeywordScanner:
    """Built once per compiled point; ``scan`` returns a bitmask of hit lists and the terms that hit."""

    __slots__ = ("_automaton", "_keys", "_plain", "_regexes")

    def __init__(self, lists: Sequence[KeywordListSpec]) -> None:
        self._keys = tuple(kl.key for kl in lists)
        entries: dict[str, list[tuple[int, bool, str]]] = {}
        regexes: list[tuple[int, tuple[re.Pattern[str], ...]]] = []
        for bit, kl in enumerate(lists):
            if kl.match == "regex":
                # Each pattern on its own: joined into one alternation, a term with inline flags such as
                # (?i) would no longer compile. Input is case-folded, so patterns ignore case too.
                if kl.terms:
                    regexes.append((bit, tuple(re.compile(t, re.IGNORECASE) for t in kl.terms)))
                continue
            for term in kl.terms:
                norm = normalize_text(term)
                if norm:
                    entries.setdefault(_as_bytes_str(norm), []).append((bit, kl.match == "word", norm))
        self._regexes = tuple(regexes)
        self._plain = {
            bit: frozenset(normalize_text(t) for t in kl.terms) for bit, kl in enumerate(lists) if kl.match != "regex"
        }
        if entries:
            automaton = ahocorasick.Automaton()
            for key, hits in entries.items():
                automaton.add_word(key, (len(key), tuple(hits)))
            automaton.make_automaton()
            self._automaton: ahocorasick.Automaton | None = automaton
        else:
            self._automaton = None

    @property
    def list_keys(self) -> tuple[str, ...]:
        return self._keys

    def scan(self, normalized: str) -> tuple[int, dict[int, list[str]]]:
        """``normalized`` must already be ``normalize_text(input)``."""
        mask = 0
        found: dict[int, list[str]] = {}
        if self._automaton is not None and normalized:
            data = _as_bytes_str(normalized)
            last = len(data) - 1
            for end, (length, hits) in self._automaton.iter(data):
                start = end - length + 1
                for bit, whole_word, term in hits:
                    if whole_word and (
                        (start > 0 and ord(data[start - 1]) in _WORD_BYTES)
                        or (end < last and ord(data[end + 1]) in _WORD_BYTES)
                    ):
                        continue
                    mask |= 1 << bit
                    terms = found.setdefault(bit, [])
                    if term not in terms:
                        terms.append(term)
        for bit, patterns in self._regexes:
            for pattern in patterns:
                match = pattern.search(normalized)
                if match:
                    mask |= 1 << bit
                    found.setdefault(bit, []).append(match.group(0))
                    break
        return mask, found

    def known_hits(self, named: Mapping[str, Sequence[str]]) -> tuple[int, dict[int, list[str]]]:
        """Hits recorded earlier (list key → the terms that hit) that these lists still contain.

        Replays use them because the logged input is masked: a keyword inside masked personal data
        (a phone number holding 12315) is no longer in the text, but it was seen when the decision was made.
        """
        mask = 0
        found: dict[int, list[str]] = {}
        regexes = dict(self._regexes)
        for bit, key in enumerate(self._keys):
            for term in named.get(key, ()):
                if bit in regexes:
                    held = any(p.search(term) for p in regexes[bit])
                else:
                    held = normalize_text(term) in self._plain.get(bit, frozenset())
                if held:
                    mask |= 1 << bit
                    found.setdefault(bit, []).append(term)
        return mask, found

    def named_hits(self, found: Mapping[int, list[str]]) -> dict[str, tuple[str, ...]]:
        return {self._keys[bit]: tuple(terms) for bit, terms in sorted(found.items())}

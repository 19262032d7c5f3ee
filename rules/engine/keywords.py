"""One pass over the input finds every keyword of every list a point uses.

Plain terms (substring and whole-word lists) go into one Aho–Corasick automaton: daachorse's
character-wise double-array automaton, whose state transitions are array lookups. pyahocorasick, which
this scanner used first, walks a linked list of children at every step; over 5,000 CJK terms and
500-character inputs it measured ~4× slower, which alone kept the decision path from its throughput
target (bench/RESULTS.md, "Keyword scanners"). A ``re`` alternation of thousands of terms is slower still
(3 ms p99), so regular expressions are kept for lists in regex mode only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import daachorse

from rules.engine.normalize import normalize_text

# Whole-word mode is for Latin text: a term is a word when no ASCII letter, digit or underscore touches
# it. CJK has no spaces between words, so a CJK neighbour never blocks a match.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class KeywordListSpec:
    key: str
    match: str  # substring | word | regex
    terms: tuple[str, ...]


class KeywordScanner:
    """Built once per compiled point; ``scan`` returns a bitmask of hit lists and the terms that hit."""

    __slots__ = ("_automaton", "_hits", "_keys", "_plain", "_regexes")

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
                    pattern = _SURROGATE.sub("\ufffd", norm)  # as scan() spells input it must clean
                    entries.setdefault(pattern, []).append((bit, kl.match == "word", norm))
        self._regexes = tuple(regexes)
        self._plain = {
            bit: frozenset(normalize_text(t) for t in kl.terms) for bit, kl in enumerate(lists) if kl.match != "regex"
        }
        # Pattern ids index ``_hits``: one entry per distinct normalised term, with every list holding it.
        self._hits = tuple(tuple(hits) for hits in entries.values())
        self._automaton = daachorse.CharwiseDoubleArrayAhoCorasick(list(entries)) if entries else None

    @property
    def list_keys(self) -> tuple[str, ...]:
        return self._keys

    def scan(self, normalized: str) -> tuple[int, dict[int, list[str]]]:
        """``normalized`` must already be ``normalize_text(input)``."""
        mask = 0
        found: dict[int, list[str]] = {}
        if self._automaton is not None and normalized:
            try:
                matches = self._automaton.find_overlapping(normalized)
            except UnicodeEncodeError:
                # A lone surrogate cannot cross into Rust; U+FFFD keeps every position where it was.
                matches = self._automaton.find_overlapping(_SURROGATE.sub("\ufffd", normalized))
            if matches:
                last = len(normalized)
                all_hits = self._hits
                for start, end, pid in matches:
                    for bit, whole_word, term in all_hits[pid]:
                        if whole_word and (
                            (start > 0 and normalized[start - 1] in _WORD_CHARS)
                            or (end < last and normalized[end] in _WORD_CHARS)
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

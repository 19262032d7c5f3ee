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

from rules.engine.normalize import fold_traditional, has_cjk, join_cjk, normalize_text, strip_ignorable

# Whole-word mode is for Latin text: a term is a word when no ASCII letter, digit or underscore touches
# it. CJK has no spaces between words, so a CJK neighbour never blocks a match.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class KeywordListSpec:
    key: str
    match: str  # substring | word | regex
    terms: tuple[str, ...]
    # Evasion options (a list's own choice, part of its revision). They change only how CJK text matches,
    # so they take effect for substring and word lists holding at least one CJK term.
    fold_traditional: bool = False
    ignore_cjk_gaps: bool = False
    # Format characters and variation selectors are ignored by every list of a revision written since
    # matching learnt to (rules 0011); a revision from before keeps its matching, so its replays agree.
    ignore_format: bool = False

    def view(self) -> View:
        """How the input is read for this list: (ignore format characters, fold Traditional, join CJK)."""
        cjk = self.match != "regex" and any(has_cjk(t) for t in self.terms)
        return (self.ignore_format, cjk and self.fold_traditional, cjk and self.ignore_cjk_gaps)


# (ignore format characters, fold Traditional to Simplified, drop gaps between CJK characters)
View = tuple[bool, bool, bool]


def read_as(text: str, view: View) -> str:
    """``text`` (already ``normalize_text``-ed) as lists of this view match it. Terms go through it too."""
    ignore_format, fold, join = view
    if ignore_format:
        text = strip_ignorable(text)
    if fold:
        text = fold_traditional(text)
    if join:
        text = join_cjk(text)
    return text


class _Group:
    """The plain-term lists that read the input one way: one automaton for all of them."""

    __slots__ = ("automaton", "hits", "view")

    def __init__(self, view: View, entries: dict[str, list[tuple[int, bool, str]]]) -> None:
        self.view = view
        # Pattern ids index ``hits``: one entry per distinct pattern, with every list (and term) holding it.
        self.hits = tuple(tuple(hits) for hits in entries.values())
        self.automaton = daachorse.CharwiseDoubleArrayAhoCorasick(list(entries))


class KeywordScanner:
    """Built once per compiled point; ``scan`` returns a bitmask of hit lists and the terms that hit."""

    __slots__ = ("_groups", "_keys", "_plain", "_regexes")

    def __init__(self, lists: Sequence[KeywordListSpec]) -> None:
        self._keys = tuple(kl.key for kl in lists)
        by_view: dict[View, dict[str, list[tuple[int, bool, str]]]] = {}
        regexes: list[tuple[int, View, tuple[re.Pattern[str], ...]]] = []
        for bit, kl in enumerate(lists):
            view = kl.view()
            if kl.match == "regex":
                # Each pattern on its own: joined into one alternation, a term with inline flags such as
                # (?i) would no longer compile. Input is case-folded, so patterns ignore case too.
                if kl.terms:
                    regexes.append((bit, view, tuple(re.compile(t, re.IGNORECASE) for t in kl.terms)))
                continue
            entries = by_view.setdefault(view, {})
            for term in kl.terms:
                norm = normalize_text(term)
                pattern = _SURROGATE.sub("\ufffd", read_as(norm, view))  # as scan() spells input it must clean
                if pattern:
                    hits = entries.setdefault(pattern, [])
                    if (bit, kl.match == "word", norm) not in hits:
                        hits.append((bit, kl.match == "word", norm))
        self._regexes = tuple(regexes)
        self._plain = {
            bit: frozenset(normalize_text(t) for t in kl.terms) for bit, kl in enumerate(lists) if kl.match != "regex"
        }
        self._groups = tuple(_Group(view, entries) for view, entries in by_view.items() if entries)

    @property
    def list_keys(self) -> tuple[str, ...]:
        return self._keys

    def scan(self, normalized: str) -> tuple[int, dict[int, list[str]]]:
        """``normalized`` must already be ``normalize_text(input)``; each group reads it its own way."""
        mask = 0
        found: dict[int, list[str]] = {}
        views: dict[View, str] = {}
        for group in self._groups if normalized else ():
            text = views.get(group.view)
            if text is None:
                text = views[group.view] = read_as(normalized, group.view)
            if not text:
                continue
            try:
                matches = group.automaton.find_overlapping(text)
            except UnicodeEncodeError:
                # A lone surrogate cannot cross into Rust; U+FFFD keeps every position where it was.
                matches = group.automaton.find_overlapping(_SURROGATE.sub("\ufffd", text))
            if matches:
                last = len(text)
                all_hits = group.hits
                for start, end, pid in matches:
                    for bit, whole_word, term in all_hits[pid]:
                        if whole_word and (
                            (start > 0 and text[start - 1] in _WORD_CHARS) or (end < last and text[end] in _WORD_CHARS)
                        ):
                            continue
                        mask |= 1 << bit
                        terms = found.setdefault(bit, [])
                        if term not in terms:
                            terms.append(term)
        for bit, view, patterns in self._regexes:
            text = views.get(view)
            if text is None:
                text = views[view] = read_as(normalized, view)
            for pattern in patterns:
                match = pattern.search(text)
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
        regexes = {bit: patterns for bit, _view, patterns in self._regexes}
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

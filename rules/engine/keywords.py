"""One pass over the input finds every keyword of every list a point uses.

Plain terms (substring and whole-word lists) go into one Aho–Corasick automaton: daachorse's
character-wise double-array automaton, whose state transitions are array lookups. pyahocorasick, which
this scanner used first, walks a linked list of children at every step; over 5,000 CJK terms and
500-character inputs it measured ~4× slower, which alone kept the decision path from its throughput
target (bench/RESULTS.md, "Keyword scanners"). A ``re`` alternation of thousands of terms is slower still
(3 ms p99), so regular expressions are kept for lists in regex mode only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import daachorse

from rules.engine.evasion import (
    bridge_cjk,
    bridge_spans,
    decode_escapes,
    fold_digits,
    fold_variants,
    is_numeric,
    names_a_brand,
    not_a_whole_number,
    skeleton,
    spelling_variants,
    strip_invisible,
)
from rules.engine.negation import negated
from rules.engine.normalize import fold_traditional, gap_spans, has_cjk, join_cjk, normalize_text, strip_ignorable
from rules.engine.pinyin import BREAK, han_gate, may_be_heard, origins, read_pinyin, source_span, spellings
from rules.engine.words import is_document, is_name, is_word, on_word_edges

# Whole-word mode is for Latin text: a term is a word when no ASCII letter, digit or underscore touches
# it. CJK has no spaces between words, so a CJK neighbour never blocks a match.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Gaps that part words (spaces, punctuation), as opposed to a filler symbol put inside a word (报_警, 投*诉);
# and the marks that end a sentence, which a keyword never spans (存储媒体？曝光补偿 is two questions).
_WORD_GAP = re.compile(r"[\s,.:、。]")
_SENTENCE_END = re.compile(r"[!?;。！？；…]")


@dataclass(frozen=True, slots=True)
class KeywordListSpec:
    key: str
    match: str  # substring | word | segmented | regex
    terms: tuple[str, ...]
    # Evasion options (a list's own choice, part of its revision). Traditional folding, gaps, variants and
    # bridging change only how CJK text matches, so they take effect for lists holding at least one CJK term.
    fold_traditional: bool = False
    ignore_cjk_gaps: bool = False
    # Format characters and variation selectors are ignored by every list of a revision written since
    # matching learnt to (rules 0011); a revision from before keeps its matching, so its replays agree.
    ignore_format: bool = False
    # The options of rules.engine.evasion (rules 0019); a revision from before has them all off.
    decode_escapes: bool = False
    ignore_invisible: bool = False
    fold_variants: bool = False
    fold_confusables: bool = False
    fold_digits: bool = False
    bridge_cjk: bool = False
    match_pinyin: bool = False
    # Weak-signal patterns of one condition (``input_contains`` with ``unless``): a hit inside one of them
    # (投诉 inside 不是要投诉) does not count. Read like the terms, so they are evasion-proof the same way.
    unless: tuple[str, ...] = ()
    # ``unless_negated`` of that condition: a hit its own clause negates does not count (rules.engine.negation).
    unless_negated: bool = False

    def view(self, *, numeric: bool = False) -> View:
        """How the input is read for this list's terms (``numeric``: its numeric terms, if it folds digits)."""
        if self.match == "regex":
            return View(self.ignore_format, invisible=self.ignore_invisible, decode=self.decode_escapes)
        if numeric:
            return View(self.ignore_format, invisible=self.ignore_invisible, decode=self.decode_escapes, digits=True)
        cjk = any(has_cjk(t) for t in (*self.terms, *self.unless))
        latin = any(_LATIN.search(normalize_text(t)) for t in (*self.terms, *self.unless))
        return View(
            self.ignore_format,
            cjk and self.fold_traditional,
            cjk and self.ignore_cjk_gaps,
            decode=self.decode_escapes,
            invisible=self.ignore_invisible,
            variants=cjk and self.fold_variants,
            confusables=latin and self.fold_confusables,
            bridge=cjk and self.bridge_cjk,
        )

    def numeric_term(self, term: str) -> bool:
        return self.fold_digits and self.match != "regex" and is_numeric(normalize_text(term))


class View(NamedTuple):
    """How the input is read for some terms: each step of ``read_as``, in the order it is applied."""

    ignore_format: bool
    fold: bool = False  # Traditional → Simplified
    join: bool = False  # gaps between CJK characters
    decode: bool = False
    invisible: bool = False
    variants: bool = False
    confusables: bool = False
    bridge: bool = False
    digits: bool = False  # the numeric reading: nothing but digits is folded


_LATIN = re.compile("[a-z]")
# How each step is named when it made a match ("keyword 投诉 via pinyin"), in the order steps apply.
_STEP_NAMES = (
    ("decode", "decoding"),
    ("ignore_format", "invisible characters"),
    ("invisible", "invisible characters"),
    ("fold", "Traditional forms"),
    ("variants", "variant characters"),
    ("confusables", "confusables"),
    ("digits", "digits"),
    ("join", "gaps"),
    ("bridge", "bridging"),
)


def read_before_gaps(text: str, view: View) -> str:
    """``text`` (already ``normalize_text``-ed) as ``view`` reads it, up to dropping gaps and bridging."""
    if view.decode:
        text = decode_escapes(text)
    if view.invisible:
        text = strip_invisible(text)
    elif view.ignore_format:
        text = strip_ignorable(text)
    if view.digits:
        return fold_digits(text)
    if view.fold:
        text = fold_traditional(text)
    if view.variants:
        text = fold_variants(text)
    if view.confusables:
        text = skeleton(text)
    return text


def read_as(text: str, view: View) -> str:
    """``text`` (already ``normalize_text``-ed) as lists of this view match it. Terms go through it too."""
    text = read_before_gaps(text, view)
    if view.join:
        text = join_cjk(text)
    if view.bridge:
        text = bridge_cjk(text)
    return text


def _kept(text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    """Positions of ``text`` left after deleting ``spans`` (sorted, apart)."""
    kept: list[int] = []
    at = 0
    for start, end in spans:
        kept.extend(range(at, start))
        at = end
    kept.extend(range(at, len(text)))
    return kept


def before_gaps(normalized: str, view: View, start: int, end: int) -> tuple[str, int, int]:
    """A hit ``[start, end)`` of ``read_as(normalized, view)`` in the text before gaps were dropped."""
    text, index = _unjoined(normalized, view)
    return text, index[start], index[end - 1] + 1


@functools.lru_cache(maxsize=8)
def _unjoined(normalized: str, view: View) -> tuple[str, tuple[int, ...]]:
    """The text before gaps were dropped, and where each character of ``read_as`` came from in it. Cached:
    every segmented hit of one message asks (a pure function of the message and the view)."""
    text = read_before_gaps(normalized, view)
    index = list(range(len(text)))
    current = text
    for on, spans_of, step in ((view.join, gap_spans, join_cjk), (view.bridge, bridge_spans, bridge_cjk)):
        if on:
            kept = _kept(current, spans_of(current))
            index = [index[k] for k in kept]
            current = step(current)
    return text, tuple(index)


# Entry modes: how a pattern's hit is judged before it counts.
SUBSTRING, WORD, SEGMENTED, NUMBER, UNLESS = range(5)
_EDGED = {WORD: _WORD_CHARS, NUMBER: _DIGITS}


class _Group:
    """The plain-term lists that read the input one way: one automaton for all of them."""

    __slots__ = ("automaton", "hits", "judged", "view")

    def __init__(self, view: View, entries: dict[str, list[tuple[int, int, str]]], negating: int) -> None:
        self.view = view
        # Pattern ids index ``hits``: one entry per distinct pattern, with every list (and term) holding it.
        self.hits = tuple(tuple(hits) for hits in entries.values())
        self.automaton = daachorse.CharwiseDoubleArrayAhoCorasick(list(entries))
        # Whether any hit needs more than a look at its neighbours (an unless pattern, a segmenter, negation).
        self.judged = any(
            mode in (SEGMENTED, UNLESS) or negating & (1 << bit) for hits in self.hits for bit, mode, _ in hits
        )


class _PinyinGroup:
    """The Han terms of lists matching pinyin, read the way one view reads the input."""

    __slots__ = ("automaton", "gate", "hits", "view")

    def __init__(self, view: View, entries: dict[str, list[tuple[int, str, str]]]) -> None:
        self.view = view
        self.hits = tuple(tuple(hits) for hits in entries.values())
        self.automaton = daachorse.CharwiseDoubleArrayAhoCorasick(list(entries))
        # Reading the whole text as pinyin is skipped where no term can be heard in it (most messages).
        self.gate = han_gate(pattern for hits in self.hits for _bit, _term, pattern in hits)


class KeywordScanner:
    """Built once per compiled point; ``scan`` returns a bitmask of hit lists and the terms that hit."""

    __slots__ = ("_groups", "_keys", "_lists", "_negating", "_pinyin", "_plain", "_regexes")

    def __init__(self, lists: Sequence[KeywordListSpec]) -> None:
        self._keys = tuple(kl.key for kl in lists)
        self._lists = tuple(lists)
        by_view: dict[View, dict[str, list[tuple[int, int, str]]]] = {}
        by_pinyin: dict[View, dict[str, list[tuple[int, str, str]]]] = {}
        regexes: list[tuple[int, View, tuple[re.Pattern[str], ...]]] = []
        for bit, kl in enumerate(lists):
            if kl.match == "regex":
                # Each pattern on its own: joined into one alternation, a term with inline flags such as
                # (?i) would no longer compile. Input is case-folded, so patterns ignore case too.
                if kl.terms:
                    regexes.append((bit, kl.view(), tuple(re.compile(t, re.IGNORECASE) for t in kl.terms)))
                continue
            words = {"word": WORD, "segmented": SEGMENTED}.get(kl.match, SUBSTRING)
            char_view = kl.view()
            written = [(t, NUMBER if kl.numeric_term(t) else words) for t in kl.terms]
            for term, mode in [*written, *((u, UNLESS) for u in kl.unless)]:
                norm = normalize_text(term)
                if mode == SEGMENTED and not has_cjk(norm):
                    mode = WORD  # the segmenter is for CJK; a Latin term of a segmented list is a whole word
                view = kl.view(numeric=True) if mode == NUMBER else char_view
                pattern = _SURROGATE.sub("\ufffd", read_as(norm, view))  # as scan() spells input it must clean
                # A Latin term is also matched with a letter doubled or masked (pollice, p*lice), as a whole word.
                masked = spelling_variants(pattern) if view.confusables and mode != UNLESS else ()
                for spelt, spelt_mode in ((pattern, mode), *((m, WORD) for m in masked)):
                    if not spelt:
                        continue
                    hits = by_view.setdefault(view, {}).setdefault(spelt, [])
                    if (bit, spelt_mode, norm) not in hits:
                        hits.append((bit, spelt_mode, norm))
                if kl.match_pinyin and mode not in (NUMBER, UNLESS):
                    for spelt in spellings(pattern):
                        # Read before the skeleton, which would spell baojing baojlng.
                        spoken = char_view._replace(confusables=False)
                        held = by_pinyin.setdefault(spoken, {}).setdefault(spelt, [])
                        if (bit, norm, pattern) not in held:
                            held.append((bit, norm, pattern))
        self._regexes = tuple(regexes)
        self._plain = {
            bit: frozenset(normalize_text(t) for t in kl.terms) for bit, kl in enumerate(lists) if kl.match != "regex"
        }
        # The bits whose hits are dropped where their clause negates them (regex lists: never).
        self._negating = sum(1 << bit for bit, kl in enumerate(lists) if kl.unless_negated and kl.match != "regex")
        self._groups = tuple(_Group(view, entries, self._negating) for view, entries in by_view.items() if entries)
        self._pinyin = tuple(_PinyinGroup(view, entries) for view, entries in by_pinyin.items() if entries)

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
            if not matches:
                continue
            last = len(text)
            all_hits = group.hits
            judged: list[tuple[int, str, int, int, int]] = []  # (bit, term, start, end, mode)
            for start, end, pid in matches:
                for bit, mode, term in all_hits[pid]:
                    # A whole word: no Latin letter or digit touches it. A whole number (a numeric term
                    # read with fold_digits): no digit does, since 12315 inside an order number is no hotline.
                    if mode in _EDGED and (
                        (start > 0 and text[start - 1] in _EDGED[mode]) or (end < last and text[end] in _EDGED[mode])
                    ):
                        continue
                    if mode == NUMBER and not_a_whole_number(text, start, end):
                        continue
                    if mode == WORD and names_a_brand(text, end):
                        continue
                    if group.judged:
                        judged.append((bit, term, start, end, mode))
                        continue
                    mask |= 1 << bit
                    terms = found.setdefault(bit, [])
                    if term not in terms:
                        terms.append(term)
            if judged:
                mask |= self._judge(normalized, group.view, text, judged, found)
        for spoken in self._pinyin if normalized else ():
            mask |= self._scan_pinyin(normalized, spoken, views, found)
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

    def _judge(
        self,
        normalized: str,
        view: View,
        text: str,
        judged: list[tuple[int, str, int, int, int]],
        found: dict[int, list[str]],
    ) -> int:
        """The hits of a group with unless patterns or segmented lists: which count (only run on a hit)."""
        mask = 0
        unless: dict[int, list[tuple[int, int]]] = {}
        for bit, _term, start, end, mode in judged:
            if mode == UNLESS:
                unless.setdefault(bit, []).append((start, end))
        for bit, term, start, end, mode in judged:
            if mode == UNLESS or any(us <= start and end <= ue for us, ue in unless.get(bit, ())):
                continue
            if mode == SEGMENTED and not self._a_word(normalized, view, text, start, end):
                continue
            if self._negating & (1 << bit) and negated(*before_gaps(normalized, view, start, end)):
                continue
            mask |= 1 << bit
            terms = found.setdefault(bit, [])
            if term not in terms:
                terms.append(term)
        return mask

    @staticmethod
    def _a_word(normalized: str, view: View, text: str, start: int, end: int) -> bool:
        """Whether a hit of a segmented list is a word (or a document of it: 起诉书) as a reader reads it."""
        if on_word_edges(text, start, end):
            if not (view.join or view.bridge):
                return True
            # A word only once a gap was dropped must be words as written too: 我投，诉求 is 投 and 诉求 with a
            # comma between, never 投诉. (我要投、诉 is 投 and 诉: it is.) A bridged letter or a filler is no gap
            # between words: 报ㄅ警, 报_警了 (which the segmenter cuts 报 / _ / 警了).
            before, b_start, b_end = before_gaps(normalized, view, start, end)
            if _SENTENCE_END.search(before, b_start, b_end):
                return False
            return not _WORD_GAP.search(before, b_start, b_end) or on_word_edges(before, b_start, b_end)
        if is_document(text, start, end):
            return True
        if not (view.join or view.bridge):
            return False
        # Not a word as read; perhaps as written, before gaps were dropped: 我要投、诉 has 投 and 诉 as words of
        # their own. 日报、警报 is 日报 and 警报 either way, so never 报警.
        before, b_start, b_end = before_gaps(normalized, view, start, end)
        if _SENTENCE_END.search(before, b_start, b_end):
            return False
        return before != text and on_word_edges(before, b_start, b_end)

    def _scan_pinyin(
        self, normalized: str, group: _PinyinGroup, views: dict[View, str], found: dict[int, list[str]]
    ) -> int:
        text = views.get(group.view)
        if text is None:
            text = views[group.view] = read_as(normalized, group.view)
        if not text or not may_be_heard(text, group.gate):
            return 0
        spoken = read_pinyin(text)
        if spoken == BREAK * 2:
            return 0
        mask = 0
        located: tuple[list[int], list[bool]] | None = None
        for start, end, pid in group.automaton.find_overlapping(spoken):
            for bit, term, pattern in group.hits[pid]:
                if mask & (1 << bit) and term in found.get(bit, ()):
                    continue
                if located is None:
                    located = origins(text)
                first, stop, han = source_span(*located, start, end)
                if text[first:stop] == pattern:
                    continue  # the term itself: the plain reading has it (or its unless pattern dropped it)
                # A word of its own that only sounds like the term is that word (投宿 is not 投诉), and a
                # homophone must sit on word edges (请报经理: 报经 is no word here, so not 报警 either).
                # A name that sounds like it is that name (收件人鲍静).
                if han and (
                    is_word(text[first:stop]) or not on_word_edges(text, first, stop) or is_name(text, first, stop)
                ):
                    continue
                if self._negating & (1 << bit) and negated(*before_gaps(normalized, group.view, first, stop)):
                    continue
                mask |= 1 << bit
                terms = found.setdefault(bit, [])
                if term not in terms:
                    terms.append(term)
        return mask

    def explained_hits(self, normalized: str, found: Mapping[int, list[str]]) -> dict[str, tuple[str, ...]]:
        """``named_hits`` with the step that made each hit (``投诉 via pinyin``); only run for a reason."""
        out: dict[str, list[str]] = {}
        read: dict[View, str] = {}  # the text under each partial reading, shared by every hit term
        for bit, terms in sorted(found.items()):
            kl = self._lists[bit]
            listed = out.setdefault(self._keys[bit], [])
            for term in terms:
                via = self._via(kl, normalized, term, read) if kl.match != "regex" else None
                shown = f"{term} via {via}" if via else term
                if shown not in listed:
                    listed.append(shown)
        return {key: tuple(terms) for key, terms in out.items()}

    @staticmethod
    def _via(kl: KeywordListSpec, normalized: str, term: str, read: dict[View, str]) -> str | None:
        """The first step of the list's reading after which the term is in the text (None: as written)."""
        if term in normalized:
            return None
        view = kl.view(numeric=kl.numeric_term(term))
        partial = View(False)
        for flag, name in _STEP_NAMES:
            if not getattr(view, flag):
                continue
            partial = partial._replace(**{flag: True})
            text = read.get(partial)
            if text is None:
                text = read[partial] = read_as(normalized, partial)
            spelt = read_as(term, partial)
            if spelt in text:
                return name
            if flag == "confusables" and any(m in text for m in spelling_variants(spelt)):
                return name
        if kl.match_pinyin:
            # Only if the text read as pinyin holds it: a hit recorded earlier (a replay of masked input) or
            # one no reading explains has no "via".
            spoken = view._replace(confusables=False)
            text = read.get(spoken)
            if text is None:
                text = read[spoken] = read_as(normalized, spoken)
            heard = read_pinyin(text)
            if any(spelt in heard for spelt in spellings(read_as(term, spoken))):
                return "pinyin"
        return None

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

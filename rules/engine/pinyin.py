"""Pinyin matching (the ``match_pinyin`` option): homophones and pinyin spellings of Han keywords.

The text is read as syllables: each Han character becomes its first reading in pypinyin's character table
(toneless), Latin letters stay, and everything else is one syllable break. A term becomes every spelling its
characters can be read as, with and without breaks between syllables, so 头诉, 投苏, ``tou su``, ``TouSu``
and ``wo yao tousu`` all read as 投诉, and 媒体暴光 as 媒体曝光 (曝 reads pù or bào). A hit must begin and end on a
syllable break: ``tousu`` inside a longer Latin word is not one. Where the hit's characters are the term itself,
the plain matching has it already and the pinyin hit is dropped.

pypinyin is pinned: its table is part of what a revision's matching means.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata

BREAK = "'"
_NOT_LETTER = re.compile("[^a-z]+")


def _toneless(reading: str) -> str:
    reading = reading.replace("ü", "v").replace("ǖ", "v").replace("ǘ", "v").replace("ǚ", "v").replace("ǜ", "v")
    return "".join(c for c in unicodedata.normalize("NFD", reading) if not unicodedata.combining(c))


@functools.cache
def readings() -> dict[int, tuple[str, ...]]:
    """Han character → its toneless readings, the first being the one the text is read with."""
    from pypinyin.pinyin_dict import pinyin_dict

    table: dict[int, tuple[str, ...]] = {}
    for cp, text in pinyin_dict.items():
        spelt: list[str] = []
        for reading in text.split(","):
            plain = _toneless(reading)
            if plain.isascii() and plain.isalpha() and plain not in spelt:
                spelt.append(plain)
        if spelt:
            table[cp] = tuple(spelt)
    return table


@functools.cache
def _translation() -> dict[int, str]:
    return {cp: f"{BREAK}{spelt[0]}{BREAK}" for cp, spelt in readings().items()}


def read_pinyin(text: str) -> str:
    """``text`` (case-folded) as syllables between breaks: ``我要头诉`` → ``'wo'yao'tou'su'``."""
    return BREAK + _NOT_LETTER.sub(BREAK, text.translate(_translation())).strip(BREAK) + BREAK


def spellings(term: str, limit: int = 64) -> tuple[str, ...]:
    """Every way ``term`` (Han characters only) may be read, as patterns over ``read_pinyin`` text; () if
    it holds anything else. With and without breaks: ``'tou'su'`` and ``'tousu'``."""
    table = readings()
    options = [table.get(ord(c)) for c in term]
    if not term or any(o is None for o in options):
        return ()
    out: list[str] = []
    for syllables in itertools.islice(itertools.product(*options), limit):  # type: ignore[arg-type]
        for joins in itertools.islice(itertools.product((BREAK, ""), repeat=len(syllables) - 1), limit):
            spelt = syllables[0] + "".join(j + s for j, s in zip(joins, syllables[1:], strict=True))
            pattern = f"{BREAK}{spelt}{BREAK}"
            if pattern not in out:
                out.append(pattern)
    return tuple(out)


def source_span(text: str, start: int, end: int) -> tuple[int, int, bool]:
    """The characters of ``text`` that ``read_pinyin(text)[start:end]`` was read from: (start, end, all Han).

    Walks the text once; only called for a hit."""
    translation = _translation()
    at = 0  # position in the pinyin text, breaks as read_pinyin collapses them
    out = BREAK
    first = last = -1
    han = True
    for i, ch in enumerate(text):
        piece = translation.get(ord(ch))
        is_han = piece is not None
        if piece is None:
            piece = ch if "a" <= ch <= "z" else BREAK
        for p in piece:
            if p == BREAK and out.endswith(BREAK):
                continue
            out += p
            at = len(out)
            if p != BREAK and start < at <= end:
                if first < 0:
                    first = i
                last = i
                han = han and is_han
    if first < 0:
        return 0, 0, False
    return first, last + 1, han

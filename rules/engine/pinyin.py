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


def origins(text: str) -> tuple[list[int], list[bool]]:
    """For each character of ``read_pinyin(text)``: the index in ``text`` it was read from (-1 for a break),
    and whether that was a Han character. One walk of the text, made only when the text has a pinyin hit."""
    translation = _translation()
    where: list[int] = [-1]
    han: list[bool] = [False]
    for i, ch in enumerate(text):
        piece = translation.get(ord(ch))
        is_han = piece is not None
        if piece is None:
            piece = ch if "a" <= ch <= "z" else BREAK
        for p in piece:
            if p == BREAK:
                if where[-1] != -1:
                    where.append(-1)
                    han.append(False)
                continue
            where.append(i)
            han.append(is_han)
    if where[-1] != -1:
        where.append(-1)
        han.append(False)
    return where, han


def source_span(where: list[int], han: list[bool], start: int, end: int) -> tuple[int, int, bool]:
    """The characters of the text that ``read_pinyin(text)[start:end]`` was read from: (start, end, all Han)."""
    letters = [k for k in range(start, end) if where[k] >= 0]
    if not letters:
        return 0, 0, False
    return where[letters[0]], where[letters[-1]] + 1, all(han[k] for k in letters)

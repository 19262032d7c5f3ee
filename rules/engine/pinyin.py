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
from collections.abc import Iterable

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


# Pinyin written with its tone marks (tóusù, bàojǐng, lǜ) and zhuyin (ㄊㄡˊㄙㄨˋ) are read as toneless pinyin.
# Text holding neither (nearly all) is read with one ``str.translate``; text holding one is walked.
_MARKED_OR_ZHUYIN = re.compile("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f\u3105-\u312f\u31a0-\u31bf]")
_LATIN_MARKED = re.compile("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f]")
_ZHUYIN = re.compile("[\u3105-\u312f\u31a0-\u31bf]+")
_ZHUYIN_TONES = "\u02c9\u02ca\u02c7\u02cb\u02d9"  # ˉ ˊ ˇ ˋ ˙, each ending a syllable
_U_UMLAUT = {"ü": "v", "ǖ": "v", "ǘ": "v", "ǚ": "v", "ǜ": "v"}


@functools.cache
def zhuyin_syllables() -> dict[str, str]:
    """Zhuyin (bopomofo) spelling → the toneless pinyin syllable, for every syllable of ``readings``."""
    from pypinyin.style.bopomofo import converter

    table: dict[str, str] = {}
    for syllable in sorted({s for spelt in readings().values() for s in spelt}):
        zhuyin = converter.to_bopomofo(syllable.replace("v", "ü")).strip(_ZHUYIN_TONES)
        if zhuyin and _ZHUYIN.fullmatch(zhuyin):
            table.setdefault(zhuyin, syllable)
    return table


@functools.cache
def _latin_letter(char: str) -> str | None:
    """A Latin letter with a tone mark or other diacritic → its base letter ("" for a lone combining mark)."""
    if char in _U_UMLAUT:
        return _U_UMLAUT[char]
    if unicodedata.combining(char):
        return ""
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)).casefold()
    return base if base.isascii() and base.isalpha() else None


def _zhuyin_at(text: str, i: int) -> tuple[str, int]:
    """The longest zhuyin syllable at ``text[i]`` (and the tone mark after it): (pinyin, end), or ("", i)."""
    table = zhuyin_syllables()
    for length in (4, 3, 2, 1):
        syllable = table.get(text[i : i + length])
        if syllable:
            end = i + length
            if end < len(text) and text[end] in _ZHUYIN_TONES:
                end += 1
            return syllable, end
    return "", i


def _walk(text: str) -> tuple[str, list[int], list[bool]]:
    """``read_pinyin`` with, for each of its characters, the index in ``text`` it was read from (-1 for a
    break) and whether that was a Han character."""
    translation = _translation()
    out: list[str] = [BREAK]
    where: list[int] = [-1]
    han: list[bool] = [False]

    def cut() -> None:
        if where[-1] != -1:
            out.append(BREAK)
            where.append(-1)
            han.append(False)

    def letters(spelt: str, first: int, last: int, is_han: bool) -> None:
        for k, letter in enumerate(spelt):
            out.append(letter)
            where.append(last if k == len(spelt) - 1 else first)
            han.append(is_han)

    i = 0
    while i < len(text):
        ch = text[i]
        piece = translation.get(ord(ch))
        if piece is not None:
            cut()
            letters(piece.strip(BREAK), i, i, True)
            cut()
            i += 1
            continue
        if "a" <= ch <= "z":
            letters(ch, i, i, False)
            i += 1
            continue
        if "\u3105" <= ch <= "\u31bf":
            syllable, end = _zhuyin_at(text, i)
            if syllable:
                cut()
                letters(syllable, i, end - 1, False)
                cut()
                i = end
                continue
        base = _latin_letter(ch) if _LATIN_MARKED.match(ch) else None
        if base is None:
            cut()
        else:
            letters(base, i, i, False)
        i += 1
    cut()
    if len(out) == 1:  # nothing read: two breaks, as ``read_pinyin`` spells it
        out.append(BREAK)
        where.append(-1)
        han.append(False)
    return "".join(out), where, han


def read_pinyin(text: str) -> str:
    """``text`` (case-folded) as syllables between breaks: ``我要头诉`` → ``'wo'yao'tou'su'``; ``tóusù`` and
    ``ㄊㄡˊㄙㄨˋ`` → ``'tousu'`` and ``'tou'su'``."""
    if not text.isascii() and _MARKED_OR_ZHUYIN.search(text):
        return _walk(text)[0]
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
    _spoken, where, han = _walk(text)
    return where, han


def source_span(where: list[int], han: list[bool], start: int, end: int) -> tuple[int, int, bool]:
    """The characters of the text that ``read_pinyin(text)[start:end]`` was read from: (start, end, all Han)."""
    letters = [k for k in range(start, end) if where[k] >= 0]
    if not letters:
        return 0, 0, False
    return where[letters[0]], where[letters[-1]] + 1, all(han[k] for k in letters)


def _char_class(codepoints: Iterable[int]) -> str:
    ranges: list[list[int]] = []
    for cp in sorted(codepoints):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in ranges)


# Text that may hold a pinyin hit without Han characters for every syllable: Latin letters (tousu, 投su),
# tone-marked letters, zhuyin, or an astral character (which the gate below, BMP only, does not read).
_NOT_GATED = re.compile("[a-z\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f\u3105-\u312f\u31a0-\u31bf\U00010000-\U0010ffff]")


# A gate is built for a few terms only (the demo's list has six): its pattern grows with every term, and a
# list of thousands of terms would find a homophone in nearly every message anyway.
GATED_TERMS_AT_MOST = 64


def han_gate(terms: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern that finds, in text without Latin letters, zhuyin or astral characters, every place where
    one of ``terms`` could be heard: for each character of a term, any character read as one of its
    readings, with nothing read as a letter between them. ``read_pinyin`` (a translation of the whole text,
    the costly part of pinyin matching) is worked out only where it finds one; it never finds fewer than the
    reading does (tests/rules/engine/test_evasion_readings.py). None for too many terms: no gate."""
    chosen = frozenset(terms)
    return _gate(chosen) if len(chosen) <= GATED_TERMS_AT_MOST else None


@functools.cache
def _heard_as() -> tuple[dict[str, tuple[int, ...]], str]:
    """Syllable → the BMP characters read as it; and what may stand between two syllables' characters:
    anything but a letter or a character that is read (so Han characters without a reading, too)."""
    heard_as: dict[str, list[int]] = {}
    for cp, spelt in readings().items():
        if cp < 0x10000:
            heard_as.setdefault(spelt[0], []).append(cp)
    han = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)]
    unread = [cp for a, b in han for cp in range(a, b + 1) if cp not in readings()]
    blocked = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in han)
    unread_class = f"|[{_char_class(unread)}]" if unread else ""
    between = f"(?:[^a-z{blocked}]{unread_class})*"
    return {s: tuple(cps) for s, cps in heard_as.items()}, between


@functools.lru_cache(maxsize=64)
def _gate(terms: frozenset[str]) -> re.Pattern[str]:
    table = readings()
    heard_as, between = _heard_as()
    alternatives = []
    for term in sorted(terms):
        chars = [sorted({cp for s in table.get(ord(c), ()) for cp in heard_as.get(s, ())}) for c in term]
        if chars and all(chars):
            alternatives.append(between.join(f"[{_char_class(cps)}]" for cps in chars))
    return re.compile("|".join(alternatives) or "(?!)")


def may_be_heard(text: str, gate: re.Pattern[str] | None) -> bool:
    """Whether ``text`` (as a pinyin list's view reads it) can hold a pinyin hit of the gate's terms."""
    return gate is None or _NOT_GATED.search(text) is not None or gate.search(text) is not None

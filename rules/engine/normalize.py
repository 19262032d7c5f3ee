"""Text normalisation shared by keyword terms and (later) request input.

NFKC folds full-width digits and letters into their ASCII forms (``１２３１５`` → ``12315``) and
case folding makes ``Refund`` and ``REFUND`` the same term. Pure Python, no Django.
"""

from __future__ import annotations

import re
import unicodedata

# Full-width ASCII (U+FF01–FF5E) is what customer messages mostly need folded: order numbers typed
# with a Chinese input method, and the full-width comma, colon, brackets and marks of every Chinese
# sentence. Replacing the commonest of them with plain ``str.replace`` (C speed), then the other full-width
# runs, then full NFKC only if anything still needs it, gives the same result as NFKC on the whole text
# (tests/rules/engine/test_normalize.py); on the benchmark's inputs it measured ~40% faster than folding
# every full-width run with the regular expression.
_COMMON_FULLWIDTH = tuple((c, unicodedata.normalize("NFKC", c)) for c in "，：！？；（）０１２３４５６７８９")
_FULLWIDTH_RUN = re.compile("[\uff01-\uff5e]+")


def _fold_fullwidth(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group())


def normalize_text(text: str) -> str:
    if not unicodedata.is_normalized("NFKC", text):
        for wide, narrow in _COMMON_FULLWIDTH:
            if wide in text:
                text = text.replace(wide, narrow)
        if not unicodedata.is_normalized("NFKC", text):
            text = _FULLWIDTH_RUN.sub(_fold_fullwidth, text)
            if not unicodedata.is_normalized("NFKC", text):
                text = unicodedata.normalize("NFKC", text)
    return text.casefold().strip()


def normalize_term(term: str, match_mode: str) -> str:
    """How a keyword term is stored. Regular expressions are only trimmed: case folding would turn
    ``\\D`` into ``\\d``; the engine matches them case-insensitively against normalised input instead."""
    if match_mode == "regex":
        return term.strip()
    return normalize_text(term)


# --- Keyword evasion -------------------------------------------------------------------------------
# What keyword matching (never the recorded input) sees through. Each step is a pure function of the text,
# applied in the same way to a list's terms and to the input, so a term always matches itself.

# Unicode format characters (general category Cf: soft hyphen, zero-width space and joiners, word joiner,
# bidi marks and embeddings, BOM, tag characters, …), the combining grapheme joiner and the variation
# selectors. Written out rather than read from ``unicodedata`` at run time: what matching ignores must not
# change with the Python build, or replays of old decisions would (tests/rules/engine/test_evasion.py checks
# the list against this interpreter's Unicode data).
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]+"
)

# CJK characters for "between CJK characters": kana, the Han ideographs (unified, extensions A–H,
# compatibility) and Hangul syllables. Punctuation of those scripts (、。・「」) is not among them.
CJK_CHARS = (
    "\u3041-\u3096\u30a1-\u30fa\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
    "\U00020000-\U0002fa1f\U00030000-\U0003134f\U00031350-\U000323af"
)
_CJK = re.compile(f"[{CJK_CHARS}]")
# Anything that is neither a letter nor a digit (spaces, punctuation, symbols, emoji, marks) between two
# CJK characters. Latin letters and digits are never dropped, so Latin word boundaries stay where they were.
_CJK_GAP = re.compile(f"(?<=[{CJK_CHARS}])[\\W_]+(?=[{CJK_CHARS}])")
# The same, written to start with the gap (rarer than CJK characters in CJK text, so ``re`` skips ahead to
# it) and to look back two characters from its first one; BMP ranges only, for text without an astral
# character (nearly all). Measured on 10,000 characters of after-sales text: ~4x faster (bench/RESULTS.md).
_CJK_BMP_CHARS = "\u3041-\u3096\u30a1-\u30fa\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
_CJK_GAP_BMP = re.compile(f"[\\W_](?<=[{_CJK_BMP_CHARS}].)[\\W_]*(?=[{_CJK_BMP_CHARS}])")


def _gaps(text: str) -> re.Pattern[str]:
    return _CJK_GAP if _ASTRAL_ANY.search(text) else _CJK_GAP_BMP


_ASTRAL_ANY = re.compile("[\U00010000-\U0010ffff]")


def _char_class(codepoints: list[int]) -> str:
    """A regular-expression character class of these code points, as ranges."""
    ranges: list[list[int]] = []
    for cp in sorted(codepoints):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in ranges)


# ``re`` tests a class of BMP characters with one bitmap lookup, but a class holding astral characters
# range by range. So each test first looks for BMP characters, and for astral ones only in text that
# has any (one range: cheap).
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_IGNORABLE_BMP = re.compile(f"[{_char_class([cp for cp in range(0x10000) if _IGNORABLE.match(chr(cp))])}]")


def strip_ignorable(text: str) -> str:
    """Drop format characters and variation selectors (``投\u200b诉`` → ``投诉``)."""
    if text.isascii():
        return text
    if _IGNORABLE_BMP.search(text) or (_ASTRAL.search(text) and _IGNORABLE.search(text)):
        return _IGNORABLE.sub("", text)
    return text


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def join_cjk(text: str) -> str:
    """Drop spaces and punctuation between CJK characters (``投 诉``, ``投-诉``, ``投.诉`` → ``投诉``)."""
    return text if text.isascii() else _gaps(text).sub("", text)


def gap_spans(text: str) -> list[tuple[int, int]]:
    """Where ``join_cjk`` deletes (start, end), for mapping a hit back to the text before it."""
    return [] if text.isascii() else [m.span() for m in _gaps(text).finditer(text)]


def _traditional_table() -> dict[int, str]:
    """Traditional → Simplified, one character for one, from OpenCC's character table (opencc-purepy).

    Characters only, not OpenCC's phrase conversion: a phrase rule converts a character by its neighbours,
    so a term and the same term inside a sentence could come out differently. A character table folds the
    same everywhere. Where OpenCC offers several, the first (its default) is taken; chains (A → B, B → C)
    are followed to their end so that folding twice changes nothing.
    """
    from importlib.resources import files

    text = files("opencc_purepy").joinpath("dicts", "TSCharacters.txt").read_text(encoding="utf-8")
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        source, _, targets = line.partition("\t")
        target = targets.split(" ")[0] if targets else ""
        if len(source) == 1 and len(target) == 1 and source != target:
            pairs[source] = target
    table: dict[int, str] = {}
    for source, target in pairs.items():
        seen = {source}
        while target in pairs and target not in seen:
            seen.add(target)
            target = pairs[target]
        if target != source:
            table[ord(source)] = target
    return table


_TRADITIONAL = _traditional_table()


_TRADITIONAL_BMP_RUN = re.compile(f"[{_char_class([cp for cp in _TRADITIONAL if cp < 0x10000])}]+")


def _fold_run(match: re.Match[str]) -> str:
    return match.group().translate(_TRADITIONAL)


def fold_traditional(text: str) -> str:
    """Traditional Chinese characters to Simplified (``投訴`` → ``投诉``, ``報警`` → ``报警``).

    Only the runs of Traditional characters are translated: ``str.translate`` over a whole 500-character
    text measured ~3× the cost of finding the runs in text that has few."""
    if text.isascii():
        return text
    if _ASTRAL.search(text):
        return text.translate(_TRADITIONAL)
    return _TRADITIONAL_BMP_RUN.sub(_fold_run, text)


def traditional_table() -> dict[int, str]:
    """The folding table, for tests and for the record of what a revision's matching means."""
    return dict(_TRADITIONAL)

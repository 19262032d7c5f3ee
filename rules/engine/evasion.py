"""The keyword evasion options a list may turn on beyond format characters, Traditional forms and CJK gaps.

Each is a pure function of the text, applied the same way to a list's terms and to the input, so a term
always matches itself. The tables they read are part of what a revision's matching means: they are written
out here or kept in ``rules/engine/data`` (never read from the interpreter's Unicode version at run time),
and tests/rules/engine/test_evasion_options.py pins each one with a digest.

What each option reads as the keyword (the names are the keyword list's fields):

* ``decode_escapes``: HTML entities, percent-encoded UTF-8 and ``\\uXXXX`` escapes written as text;
* ``ignore_invisible``: every Default_Ignorable_Code_Point (the Hangul fillers among them) and the bidi
  controls; text inside a right-to-left override is read in the order it is displayed;
* ``fold_variants``: variant characters of ``data/variants.tsv`` (beyond OpenCC);
* ``fold_confusables``: Latin, Cyrillic and Greek homoglyphs and small capitals to one skeleton (UTS #39),
  digits written for letters inside Latin words, separators inside Latin words, spaced-out letters, Latin
  diacritics and combining marks; a term of five letters or more also with one letter doubled or starred;
* ``fold_digits`` (numeric terms only): digits of every script, keycaps, Chinese numerals, letters written
  for digits, separators between digits; a numeric term then matches a whole number only;
* ``bridge_cjk``: one foreign character (a Latin letter, a digit, kana, bopomofo) between two Han characters;
* ``match_pinyin`` (``rules.engine.pinyin``): homophones and pinyin spellings of Han terms.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
import urllib.parse
from importlib.resources import files

from rules.engine.normalize import CJK_CHARS, normalize_text

# The options, as a keyword list's fields and snapshot keys are named (rules 0019). A snapshot without one
# has it off (rules.engine.compiler.keyword_list_spec): a revision from before matches as it did.
EVASION_OPTIONS = (
    "decode_escapes",
    "ignore_invisible",
    "fold_variants",
    "fold_confusables",
    "fold_digits",
    "bridge_cjk",
    "match_pinyin",
)
# What a new list (and a YAML document that leaves an option out) has. Pinyin is the one a list asks for:
# homophones are the fuzziest reading (every list of thousands of terms would hit random text), and reading
# a message as pinyin costs the most (bench/RESULTS.md, "Keyword evasion options").
EVASION_DEFAULTS = {option: option != "match_pinyin" for option in EVASION_OPTIONS}

# --- Escapes written as text ---------------------------------------------------------------------------

_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});?")
# ``%u6295`` is the old JavaScript ``escape()`` form, decoded in the same one pass as ``%e6%8a%95``.
_PERCENT = re.compile(r"(?:%[0-9a-f]{2})+|(?:%u[0-9a-f]{4})+")
_PERCENT_U = re.compile(r"%u([0-9a-f]{4})")
# Input is case-folded before this pass, so ``\U00006295`` arrives as ``\u00006295``: eight hex digits after
# ``\u`` are one escape when they spell a code point (00000000-0010ffff); ``\u0000`` followed by four hex
# digits is no text anyone writes.
_UNICODE_ESCAPE = re.compile(r"\\u(00(?:0[0-9a-f]|10)[0-9a-f]{4})|\\u([0-9a-f]{4})|\\u\{([0-9a-f]{1,6})\}")


def _percent(match: re.Match[str]) -> str:
    if match.group().startswith("%u"):
        return _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)), match.group())
    try:
        return urllib.parse.unquote_to_bytes(match.group()).decode("utf-8")
    except UnicodeDecodeError:
        return match.group()  # not UTF-8: left as written (a discount of 20%ab is no escape)


def _unicode(match: re.Match[str]) -> str:
    cp = int(match.group(1) or match.group(2) or match.group(3), 16)
    return chr(cp) if cp <= 0x10FFFF else match.group()


_SURROGATE_PAIR = re.compile("([\ud800-\udbff])([\udc00-\udfff])")


def decode_escapes(text: str) -> str:
    """``&#25237;&#35785;``, ``%e6%8a%95%e8%af%89``, ``%u6295%u8bc9``, ``\\u6295\\u8bc9`` and ``\\U00006295\\U00008bc9``
    → ``投诉`` (input is already case-folded).

    One pass of each, not repeated: text encoded twice stays encoded once (the threat model says why)."""
    changed = False
    if "&" in text and _ENTITY.search(text):
        text, changed = html.unescape(text), True
    if "%" in text and _PERCENT.search(text):
        text, changed = _PERCENT.sub(_percent, text), True
    if "\\u" in text and _UNICODE_ESCAPE.search(text):
        text, changed = _UNICODE_ESCAPE.sub(_unicode, text), True
    if changed and _SURROGATE_PAIR.search(text):
        # \ud83d\ude21 (or %ud83d%ude21) written as two escapes: one character, as a JSON reader would make it.
        text = _SURROGATE_PAIR.sub(
            lambda m: (m.group(1) + m.group(2)).encode("utf-16", "surrogatepass").decode("utf-16"), text
        )
    return normalize_text(text) if changed else text


# --- Invisible characters -------------------------------------------------------------------------------

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1), with the format characters that
# are not in it (Arabic number signs and the like, which ``strip_ignorable`` has always dropped) and the
# braille blank U+2800, which renders as a space. Written out: see the module's docstring.
DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_EXTRA_INVISIBLE = (
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x2800, 0x2800),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
)
INVISIBLE_RANGES = tuple(sorted(DEFAULT_IGNORABLE_RANGES + _EXTRA_INVISIBLE))
_INVISIBLE = re.compile(
    "[" + "".join(re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in INVISIBLE_RANGES) + "]+"
)
# ``re`` tests a class of BMP characters with one bitmap lookup but astral ranges one by one: the BMP part is
# searched first, the whole class only in text holding an astral character (as strip_ignorable does).
_INVISIBLE_BMP = re.compile(
    "["
    + "".join(
        re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in INVISIBLE_RANGES if b < 0x10000
    )
    + "]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# A right-to-left override shows what follows it reversed, up to the pop (or the end of the line): ‮诉投‬
# reads 投诉 on screen, so matching reads it that way too. Other controls do not reorder Han or Latin text.
_RLO = re.compile("\u202e([^\u202c\u202d\u2069\n]*)(?:\u202c|$)")


def strip_invisible(text: str) -> str:
    """Default-ignorable and bidi-control code points removed (``投\u3164诉`` → ``投诉``)."""
    if text.isascii():
        return text
    if "\u202e" in text:
        text = _RLO.sub(lambda m: m.group(1)[::-1], text)
    if _INVISIBLE_BMP.search(text) or (_ASTRAL.search(text) and _INVISIBLE.search(text)):
        return _INVISIBLE.sub("", text)
    return text


# --- Variant characters -----------------------------------------------------------------------------------


def variant_table() -> dict[int, str]:
    """``data/variants.tsv``: variant → the form it is read as."""
    table: dict[int, str] = {}
    for line in files("rules.engine").joinpath("data", "variants.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        variant, form, _source = line.split("\t", 2)
        if len(variant) == 1 and len(form) == 1 and variant != form:
            table[ord(variant)] = form
    return table


_VARIANTS = variant_table()
_VARIANT_RUN = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_VARIANTS)) + "]")


def fold_variants(text: str) -> str:
    """``投愬`` → ``投诉``, ``媒体曝灮`` → ``媒体曝光``."""
    if text.isascii() or not _VARIANT_RUN.search(text):
        return text
    return text.translate(_VARIANTS)


# --- Confusables ------------------------------------------------------------------------------------------


def confusable_table() -> dict[int, str]:
    """Letters that look like a Latin letter → that letter, case-folded (UTS #39's skeleton for these scripts).

    From the confusables data of ``confusable-homoglyphs`` (pinned): a letter or digit whose listed look-alike
    is one ASCII letter. Small capitals (ᴘᴏʟɪᴄᴇ), which that data lists only against other small letters,
    are added by their names. CJK characters are never folded."""
    import json
    import unicodedata

    data = json.loads(files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    table: dict[int, str] = {}
    for char, entries in data.items():
        if len(char) != 1 or char.isascii() or re.match(f"[{CJK_CHARS}]", char):
            continue
        if not unicodedata.category(char).startswith(("L", "N")):
            continue
        targets = [e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalpha()]
        if targets:
            table[ord(char)] = targets[0].casefold()
            # Input is case-folded before the skeleton: ΡΟLΙCΕ arrives as ρολιcε, so a capital's look-alike
            # is its small letter's too where the data gives that one none (ε from Ε, ι from Ι).
            lower = char.casefold()
            if len(lower) == 1 and lower != char and not lower.isascii():
                table.setdefault(ord(lower), targets[0].casefold())
    for cp in range(0x1D00, 0x1D2C):
        name = unicodedata.name(chr(cp), "")
        if name.startswith("LATIN LETTER SMALL CAPITAL ") and len(name.rsplit(" ", 1)[1]) == 1:
            table[cp] = name.rsplit(" ", 1)[1].casefold()
    for cp in (0x0280, 0x0299, 0x029C, 0x029F, 0x0262, 0x026A, 0x0274, 0x0276, 0x028F, 0xA7AF):
        name = unicodedata.name(chr(cp), "")
        if "SMALL CAPITAL" in name and len(name.rsplit(" ", 1)[1]) == 1:
            table[cp] = name.rsplit(" ", 1)[1].casefold()
    return table


_CONFUSABLES = confusable_table()
_CONFUSABLE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_CONFUSABLES) if c < 0x10000) + "]")
# Digits and symbols written for letters, only where they touch a Latin letter (p0lice, 5ue); 12315 alone
# is a number and stays one. i, l and 1 are one skeleton character, as UTS #39 makes I, l and 1 one.
_LEET = {"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "@": "a", "$": "s", "|": "l", "!": "l",
         "¢": "c", "€": "e"}  # fmt: skip
# Each pattern starts with a character class, not a look-behind, so that ``re`` skips ahead to a candidate
# (measured: ~4x faster on 500-character CJK texts than the same tests written with a look-behind first).
_LEET_TABLE = str.maketrans(_LEET)
_LEET_NEXT_TO_LETTER = re.compile(r"[0134578@$|!¢€](?:(?<=[a-z].)|(?=[a-z]))")
_LEET_SYMBOL = re.compile(r"[@$|!¢€](?<=[a-z].)(?=[a-z])")
# A symbol only inside a word (p@lice, po|ice): after one (police!!!) it is punctuation, not a letter.
# A digit touching a letter is read with the whole run of such digits around it (p00lice), in one pass; a
# symbol only between two letters. Found with a pattern that starts with a character class (``re`` skips ahead
# to candidates, which are few), each run widened in Python: a pattern matching every digit run measured ~4x
# slower on text full of phone numbers.
# (¢ and € are read as letters the way digits are, at a word's edge too: polic€. They are no punctuation.)
_LEET_DIGITS = frozenset("0134578¢€")


def _read_leet(text: str) -> str:
    out: list[str] = []
    at = 0
    symbols = False
    for match in _LEET_NEXT_TO_LETTER.finditer(text):
        start, end = match.span()
        if start < at:
            continue
        if text[start] not in _LEET_DIGITS:
            symbols = True  # read after the digits: in a!0b the ! is between letters once 0 is o
            continue
        while start > at and text[start - 1] in _LEET_DIGITS:
            start -= 1
        while end < len(text) and text[end] in _LEET_DIGITS:
            end += 1
        out.append(text[at:start])
        out.append(text[start:end].translate(_LEET_TABLE))
        at = end
    if out:
        out.append(text[at:])
        text = "".join(out)
    return _LEET_SYMBOL.sub(lambda m: m.group().translate(_LEET_TABLE), text) if symbols else text


_LATIN_INNER_SEPARATOR = re.compile(r"([a-z])[.\-_·'+~]+(?=[a-z])")
# A star stands for a letter (p*lice, the way people mask a word), unless every letter is apart (p*o*l*i*c*e:
# a separator). A term is matched masked too: ``spelling_variants`` lists its skeleton with one letter starred
# or one star put in (po*lice), and a run of stars is one.
MASK = "*"
_STARS = re.compile(r"\*{2,}")
_STARRED_LETTERS = re.compile(r"(?<![a-z*])[a-z](?:\*[a-z]){2,}(?![a-z*])")
# Latin letters with diacritics (pölice, ṕolice) and combining marks after a Latin letter: the base letter.
# Only Latin: NFKD would also take kana and Hangul apart.
_LATIN_MARKED = re.compile("[\u00c0-\u024f\u1e00-\u1eff][\u0300-\u036f]*|(?<=[a-z0-9@$|!])[\u0300-\u036f]+")
_MARK_HINT = re.compile("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f]")


@functools.cache
def _base_letter(char: str) -> str:
    if unicodedata.combining(char[0]):
        return ""
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)).casefold()
    return base if base.isascii() and base.isalpha() else char


def strip_latin_marks(text: str) -> str:
    """``pölice`` → ``police``, ``ṕolice`` → ``police``, ``po\u0301lice`` → ``police``; other scripts untouched."""
    # A plain class first: searching with the look-behind alternative costs ~10x on long CJK text.
    if text.isascii() or not _MARK_HINT.search(text):
        return text
    return _LATIN_MARKED.sub(lambda m: "".join(_base_letter(c) for c in m.group()), text)


# Three or more single letters apart (p o l i c e): one word. Looked for only where " x " occurs.
_SPACED_HINT = re.compile(" [a-z] ")
_SPACED_LETTERS = re.compile(r"(?<![a-z])[a-z](?: [a-z](?![a-z])){2,}")


def skeleton(text: str) -> str:
    """``pоlice`` (Cyrillic о), ``ᴘᴏʟɪᴄᴇ``, ``p0lice``, ``p.o.l.i.c.e``, ``po-lice``, ``pölice`` → ``pollce``, as
    ``police``; ``pollice`` → ``polllce`` and ``p*lice`` → ``p*lce``, which ``spelling_variants("pollce")`` holds."""
    if not text.isascii():
        if _CONFUSABLE.search(text):
            text = text.translate(_CONFUSABLES)
        text = strip_latin_marks(text)
    if not re.search("[a-z]", text):
        return text
    # Again while a separator gone (a!.oa) or a mark dropped (a0\u0300) put a digit or symbol next to a letter.
    while True:
        text = _read_leet(strip_latin_marks(text))
        text, joined = _LATIN_INNER_SEPARATOR.subn(r"\1", text)
        if not joined or not _LEET_NEXT_TO_LETTER.search(text):
            break
    if MASK in text:
        text = _STARS.sub(MASK, text)
        text = _STARRED_LETTERS.sub(lambda m: m.group().replace(MASK, ""), text)
    if _SPACED_HINT.search(text):
        text = _SPACED_LETTERS.sub(lambda m: m.group().replace(" ", ""), text)
    return text.replace("i", "l")


def spelling_variants(spelt: str) -> tuple[str, ...]:
    """A Latin term's skeleton as it reads with one letter doubled (``pollice``: ``polllce``), one letter
    starred (``p*lce``) or a star put in (``po*lce``). The term is spelt these ways, not the text rewritten:
    collapsing every doubled letter of a message measured ~2 ms per 10,000 characters.

    Only for terms of five letters or more: a shorter word with a letter masked is too many words."""
    if len(spelt) < 5 or not spelt.isascii() or not spelt.isalpha():
        return ()
    doubled = [spelt[: k + 1] + spelt[k:] for k in range(len(spelt))]
    starred = [spelt[:k] + MASK + spelt[k + 1 :] for k in range(len(spelt))]
    put_in = [spelt[:k] + MASK + spelt[k:] for k in range(1, len(spelt))]
    return tuple(dict.fromkeys(doubled + starred + put_in))


# --- Digits ----------------------------------------------------------------------------------------------

# The zero of every decimal digit run in Unicode 14 (general category Nd; each run is zero to nine).
DIGIT_ZEROS: tuple[int, ...] = (
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50,
    0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
    0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950,
    0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
)  # fmt: skip
# Chinese numerals, everyday and financial; 幺 is how 1 is read out in phone numbers, 两 is two. The bopomofo
# letter ㄧ (i) is drawn as 一 and typed for it; the Hangzhou (Suzhou) numerals 〡-〩 are digits of a trade.
CHINESE_DIGITS = {
    "ㄧ": "1", "〡": "1", "〢": "2", "〣": "3", "〤": "4", "〥": "5", "〦": "6", "〧": "7", "〨": "8", "〩": "9",
    "〇": "0", "零": "0", "一": "1", "幺": "1", "壹": "1", "二": "2", "两": "2", "贰": "2", "貳": "2",
    "三": "3", "叁": "3", "參": "3", "四": "4", "肆": "4", "五": "5", "伍": "5", "六": "6", "陆": "6",
    "陸": "6", "七": "7", "柒": "7", "八": "8", "捌": "8", "九": "9", "玖": "9",
}  # fmt: skip
# Digits drawn inside a circle that NFKC leaves as they are (① and ⑴ it folds to 1 and (1)): the first code
# point, the digit it stands for and how many follow in order. Numbers of ten and more (⓾, ❿) are not digits.
ENCLOSED_DIGITS: tuple[tuple[int, int, int], ...] = (
    (0x24F5, 1, 9),  # ⓵ double circled
    (0x24FF, 0, 1),  # ⓿ negative circled zero
    (0x2776, 1, 9),  # ❶ dingbat negative circled
    (0x2780, 1, 9),  # ➀ dingbat circled sans-serif
    (0x278A, 1, 9),  # ➊ dingbat negative circled sans-serif
    (0x1F10B, 0, 2),  # 🄋 🄌 dingbat circled sans-serif zero, negative
)
_DIGITS: dict[int, str] = {zero + k: str(k) for zero in DIGIT_ZEROS[1:] for k in range(10)}
_DIGITS.update({first + k: str(digit + k) for first, digit, count in ENCLOSED_DIGITS for k in range(count)})
_DIGITS.update({ord(c): d for c, d in CHINESE_DIGITS.items()})
_DIGITS[0x20E3] = ""  # the keycap enclosing mark of 1️⃣ (its variation selector is an invisible character)
# A run of digits of any kind (ASCII, other scripts, Chinese numerals, keycaps) with at most three
# separators between two of them. Only runs are rewritten: Chinese numerals are common in prose (问一下), and
# translating a whole 10,000-character message measured ~1 ms where finding its runs costs ~0.1 ms.
_DIGIT_CLASS = "0-9" + "".join(re.escape(chr(c)) for c in sorted(_DIGITS) if c < 0x10000)
_DIGIT_RUN = re.compile(f"[{_DIGIT_CLASS}](?:[\\s\\-.·_,/*~|]{{0,3}}[{_DIGIT_CLASS}])+")
# Letters written for digits, where they touch a digit and are not part of a word (I2315, 1231S).
# Cyrillic з and б and the Cyrillic and Greek o are drawn as 3, 6 and 0 (12з15).
_LETTER_DIGITS = {"o": "0", "i": "1", "l": "1", "z": "2", "s": "5", "b": "8", "з": "3", "б": "6", "о": "0", "ο": "0"}
# (Written to start with the letter, not a look-behind: ``re`` then skips to candidates, ~8x faster.)
_LETTER_DIGIT = re.compile(r"[oilzsbзбоο](?:(?<=[0-9].)(?![a-zа-яα-ω])|(?<![a-zа-яα-ω].)(?=[0-9]))")
# A digit in brackets, each on its own: NFKC writes ⑴⑵⑶ as (1)(2)(3); two or more in a row are one number.
_BRACKETED_DIGITS = re.compile(r"(?:\([0-9]\)){2,}")
_DIGIT_SEPARATOR = re.compile(r"[\s\-.·_,/*~|]+")
_ASTRAL_DIGITS = {c: d for c, d in _DIGITS.items() if c >= 0x10000}


# A point or a comma between digits reads as a decimal point or a thousands separator (123.15元, 12,315元,
# 12.31 5点): a run holding one is folded digit by digit but not joined, unless every digit in it stands
# alone (1.2.3.1.5, a number spelt out). Spaces, dashes, slashes and the like join (1 2 3 1 5, 123-15).
_NUMBER_MARKS = re.compile("[.,]")


def _fold_digit_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isdigit() and run.isascii():
        return run  # most runs: a plain number, nothing to fold
    if not run.isascii():
        run = run.translate(_DIGITS)
    if _NUMBER_MARKS.search(run) and any(len(group) > 1 for group in _DIGIT_SEPARATOR.split(run)):
        return run
    return _DIGIT_SEPARATOR.sub("", run)


def fold_digits(text: str) -> str:
    """``١٢٣١٥``, ``१२३١٥``, ``一二三一五``, ``幺二三幺五``, ``1 2 3 1 5``, ``123-15``, ``I2315`` → ``12315``."""
    if not text.isascii() and re.search("[\U00010000-\U0010ffff]", text):
        text = text.translate(_ASTRAL_DIGITS)
    if "\u20e3" in text:
        text = text.replace("\u20e3", "")
    if re.search("[0-9]", text):
        text = _LETTER_DIGIT.sub(lambda m: _LETTER_DIGITS[m.group()], text)
        if "(" in text:
            text = _BRACKETED_DIGITS.sub(lambda m: m.group().replace("(", "").replace(")", ""), text)
    return _DIGIT_RUN.sub(_fold_digit_run, text)


# A label an identifier is written after (订单号是12315, order no. 12315): the number is that identifier. Only
# right before the number, with at most 是/为/a colon between; "打12315" and "12315投诉" are not labelled.
_ID_LABEL = re.compile(
    r"(?:订单号|单号|编号|货号|尾号|账号|工号|型号|批号|卡号|会员号|order(?: no\.?| number| id)?|no\.|#)"
    r"\s*(?:是|为|:)?\s*$"
)


# A number followed by a unit or a measure word, or after a currency sign, is a quantity (12315元, 人民路12315号,
# ¥12315), never the hotline, unless it is what someone calls or dials (打12315, 拨12315号): the verb decides.
_UNIT = re.compile(
    r"\s?(?:元|块|角|毛|号(?!码)|米|公里|千米|公斤|千克|克|斤|吨|件|个|台|次|楼|层|室|栋|幢|弄|张|份|箱|包|条|瓶|盒|"
    r"平方|%|kg|km|cm|mm|rmb|yuan|dollars?)"
)
_CURRENCY = re.compile(r"[¥$€£]\s?$")
_CALL = re.compile(r"(?:打|拨|拨打|致电|电话|热线|call|dial|ring)\s?(?:了|过|给)?\s?$")


def not_a_whole_number(text: str, start: int, end: int) -> bool:
    """Whether a numeric keyword's hit ``text[start:end]`` (no digit touching it) is still part of another
    number, a label's identifier or a quantity: 12315.5, 1,12315, 订单号是12315, 12315元, 12315号."""
    if end + 1 < len(text) and text[end] in ".," and text[end + 1].isdigit():
        return True
    if start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
        return True
    if _ID_LABEL.search(text, max(0, start - 16), start) is not None:
        return True
    before = text[max(0, start - 6) : start]
    if _CURRENCY.search(before):
        return True
    return _UNIT.match(text, end) is not None and _CALL.search(before) is None


# A Latin word followed by the word for a brand or a band is that name (Police牌太阳镜, The Police乐队, Police
# brand sunglasses): what the word names is a product, not the act. Only right after the word.
_NAME_MARKER = re.compile(r"\s?(?:牌|品牌|乐队|樂隊|乐团|brand|band)(?![a-z])")


def names_a_brand(text: str, end: int) -> bool:
    """Whether a whole-word hit ending at ``end`` is followed by a brand's or a band's marker word."""
    return _NAME_MARKER.match(text, end) is not None


def is_numeric(term: str) -> bool:
    """A numeric keyword: its normalised form is ASCII digits only (``12315``)."""
    return term.isascii() and term.isdigit()


# --- One foreign character inside a CJK word ---------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\U00030000-\U000323af"
_FOREIGN = "a-z0-9\u3041-\u3096\u30a1-\u30fa\u3105-\u312f\u31a0-\u31bf"
_BRIDGE = re.compile(f"(?<=[{_HAN}])[\\W_]*[{_FOREIGN}][\\W_]*(?=[{_HAN}])")
# Text without astral characters (nearly all) is searched with the BMP ranges only: a class holding astral
# ranges is tested range by range at every position (~2x the time on 500-character CJK texts).
_HAN_BMP = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_BRIDGE_BMP = re.compile(f"(?<=[{_HAN_BMP}])[\\W_]*[{_FOREIGN}][\\W_]*(?=[{_HAN_BMP}])")


def _bridge(text: str) -> re.Pattern[str]:
    return _BRIDGE if _ASTRAL.search(text) else _BRIDGE_BMP


def bridge_cjk(text: str) -> str:
    """``投x诉``, ``投1诉``, ``投の诉``, ``投ㄊ诉`` → ``投诉``: one letter, digit, kana or bopomofo between two Han."""
    return text if text.isascii() else _bridge(text).sub("", text)


def bridge_spans(text: str) -> list[tuple[int, int]]:
    """Where ``bridge_cjk`` deletes (start, end), for mapping a hit back to the text before it."""
    return [m.span() for m in _bridge(text).finditer(text)] if not text.isascii() else []

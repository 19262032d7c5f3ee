"""Keyword matching sees through evasion: one table per evasion class, and properties over any text.

Matching (never the recorded input) ignores format characters and variation selectors; a list's two
options fold Traditional to Simplified and drop gaps between CJK characters. Latin whole-word matching keeps
its boundaries, and a revision written before any of this (its lists have neither option) matches as it did.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine.compiler import keyword_list_spec
from rules.engine.keywords import KeywordListSpec, KeywordScanner
from rules.engine.normalize import (
    _IGNORABLE,
    fold_traditional,
    join_cjk,
    normalize_text,
    strip_ignorable,
    traditional_table,
)

CJK_TERMS = ("投诉", "报警", "媒体曝光", "12315")
LATIN_TERMS = ("refund", "chargeback")


def scanner(*, match: str = "substring", terms=CJK_TERMS, fold=True, gaps=True, modern=True) -> KeywordScanner:
    return KeywordScanner(
        [
            KeywordListSpec(
                key="k", match=match, terms=terms, fold_traditional=fold, ignore_cjk_gaps=gaps, ignore_format=modern
            )
        ]
    )


def modern(key: str, match: str, terms, *, fold: bool = True, gaps: bool = True) -> KeywordListSpec:
    return KeywordListSpec(
        key=key, match=match, terms=tuple(terms), fold_traditional=fold, ignore_cjk_gaps=gaps, ignore_format=True
    )


def hits(s: KeywordScanner, text: str) -> tuple[str, ...]:
    return tuple(s.named_hits(s.scan(normalize_text(text))[1]).get("k", ()))


# --- Format characters and variation selectors: ignored by every list of a current revision -------------

FORMAT_EVASIONS = [
    ("zero-width space", "我要投\u200b诉"),
    ("zero-width non-joiner", "我要投\u200c诉"),
    ("zero-width joiner", "我要投\u200d诉"),
    ("word joiner", "我要投\u2060诉"),
    ("soft hyphen", "我要投\u00ad诉"),
    ("byte order mark", "\ufeff我要投\ufeff诉"),
    ("left-to-right mark", "我要投\u200e诉"),
    ("right-to-left mark", "我要投\u200f诉"),
    ("bidi override", "我要投\u202e诉\u202c"),
    ("bidi isolate", "我要\u2066投\u2069诉"),
    ("arabic letter mark", "投\u061c诉"),
    ("tag characters", "投\U000e0001\U000e0074\U000e0061诉\U000e007f"),
    ("variation selector", "投\ufe0f诉"),
    ("ideographic variation selector", "投\U000e0100诉"),
    ("mongolian free variation selector", "投\u180b诉"),
    ("combining grapheme joiner", "投\u034f诉"),
    ("one of each in a row", "投\u200b\u200c\u200d\u2060\u00ad\ufeff\u200e\u200f\ufe0f\U000e0020诉"),
    ("in a number", "打1\u200b2\u200d315"),
]


@pytest.mark.parametrize(("text"), [t for _, t in FORMAT_EVASIONS], ids=[n for n, _ in FORMAT_EVASIONS])
def test_format_characters_and_variation_selectors_do_not_hide_a_term(text):
    expected = ("12315",) if "315" in text else ("投诉",)
    assert hits(scanner(), text) == expected
    # every list of a current revision ignores them, whether or not its CJK options are on
    assert hits(scanner(fold=False, gaps=False), text) == expected


@pytest.mark.parametrize(("text"), [t for _, t in FORMAT_EVASIONS], ids=[n for n, _ in FORMAT_EVASIONS])
def test_a_revision_from_before_keeps_its_matching(text):
    assert hits(scanner(modern=False, fold=False, gaps=False), text) == ()


LATIN_FORMAT_EVASIONS = [
    ("soft hyphen", "I want a re\u00adfund", ("refund",)),
    ("zero-width space", "re\u200bfund now", ("refund",)),
    ("zero-width joiner at the edge", "\u200drefund\u200d", ("refund",)),
    ("word joiner", "charge\u2060back", ("chargeback",)),
    ("bidi marks around", "\u202arefund\u202c please", ("refund",)),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in LATIN_FORMAT_EVASIONS], ids=[n for n, _, _ in LATIN_FORMAT_EVASIONS]
)
@pytest.mark.parametrize("match", ["substring", "word"])
def test_format_characters_do_not_hide_a_latin_term(text, expected, match):
    assert hits(scanner(match=match, terms=LATIN_TERMS), text) == expected


def test_format_characters_do_not_hide_a_regex_match():
    s = scanner(match="regex", terms=(r"\d{5}",))
    assert hits(s, "call 1\u200b2\u200c3\u200d1\ufeff5") == ("12315",)
    assert hits(scanner(match="regex", terms=(r"\d{5}",), modern=False), "call 1\u200b2315") == ()


# --- Traditional → Simplified (a list option) ---------------------------------------------------------

TRADITIONAL = [
    ("投訴 (complaint)", "我要投訴", "投诉"),
    ("報警 (police)", "我要報警了", "报警"),
    ("媒體曝光 (media)", "我會找媒體曝光", "媒体曝光"),
    ("mixed in one word", "投訴 and 报警", "投诉 报警"),
    ("full-width and traditional", "我要投訴，打１２３１５", "投诉 12315"),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in TRADITIONAL], ids=[n for n, _, _ in TRADITIONAL])
def test_traditional_spellings_hit_the_simplified_term(text, expected):
    assert set(hits(scanner(), text)) == set(expected.split())
    # off: only what is written in Simplified (or digits) still hits
    off = {t for t in expected.split() if t in normalize_text(text)}
    assert set(hits(scanner(fold=False), text)) == off


def test_a_traditional_term_hits_simplified_and_traditional_input_and_is_recorded_as_written():
    s = scanner(terms=("投訴",))
    assert hits(s, "我要投诉") == ("投訴",)
    assert hits(s, "我要投訴") == ("投訴",)


def test_the_folding_is_opencc_s_character_table():
    assert fold_traditional("投訴報警後發髮") == "投诉报警后发发"
    table = traditional_table()
    assert len(table) > 4000
    # folding is idempotent: no character folds to one that folds again
    assert all(chr(c).translate(table) == fold_traditional(fold_traditional(chr(c))) for c in table)


def test_the_folding_table_is_pinned():
    """The table is part of what a revision's matching means: a new OpenCC release that changes it changes
    how old decisions replay. Upgrade opencc-purepy deliberately, and update this digest with a note."""
    table = traditional_table()
    digest = hashlib.sha256(json.dumps(sorted(table.items()), ensure_ascii=False).encode()).hexdigest()
    assert digest == PINNED_TABLE_DIGEST


PINNED_TABLE_DIGEST = "3a5528f69c4a958e734590e2159f4b4fd5884baf3098eadbe0a1f761ab96e798"  # opencc-purepy 1.5.0


# --- Spaces and punctuation between CJK characters (a list option) -------------------------------------

GAPS = [
    ("space", "我要投 诉"),
    ("several spaces", "我要投   诉"),
    ("ideographic space", "我要投\u3000诉"),
    ("tab and newline", "我要投\t\n诉"),
    ("hyphen", "我要投-诉"),
    ("dot", "我要投.诉"),
    ("full stop", "我要投。诉"),
    ("enumeration comma", "我要投、诉"),
    ("middle dot", "我要投·诉"),
    ("katakana middle dot", "我要投・诉"),
    ("underscore", "我要投_诉"),
    ("slash and star", "我要投/*诉"),
    ("brackets", "我要「投」「诉」"),
    ("emoji", "我要投😡诉"),
    ("full-width punctuation", "我要投！诉"),
    ("every character apart", "我 要 投 - 诉"),
    ("gaps and format characters", "投 \u200b-\u200d 诉"),
    ("gaps and traditional", "投 - 訴"),
]


@pytest.mark.parametrize("text", [t for _, t in GAPS], ids=[n for n, _ in GAPS])
def test_gaps_between_cjk_characters_do_not_hide_a_term(text):
    assert hits(scanner(), text) == ("投诉",)
    assert hits(scanner(gaps=False), text) == ()


def test_gaps_inside_a_longer_term_and_a_term_written_with_gaps():
    assert hits(scanner(), "我找媒 体 曝 光") == ("媒体曝光",)
    assert hits(scanner(terms=("投 诉",)), "我要投诉") == ("投 诉",)


NOT_GAPS = [
    ("a latin letter", "投a诉"),
    ("a digit", "投1诉"),
    ("a latin word", "投 refund 诉"),
]


@pytest.mark.parametrize("text", [t for _, t in NOT_GAPS], ids=[n for n, _ in NOT_GAPS])
def test_letters_and_digits_between_cjk_characters_are_not_gaps(text):
    assert hits(scanner(), text) == ()


# --- Latin whole-word matching keeps its boundaries ----------------------------------------------------

LATIN_BOUNDARIES = [
    ("a word", "I want a refund", ("refund",)),
    ("inside a longer word", "refunds and chargebacks", ()),
    ("joined by a hyphen", "re-fund", ()),
    ("split by a space", "re fund", ()),
    ("next to CJK", "我要refund", ("refund",)),
    ("CJK gap next to it", "投 诉refund", ("refund",)),
    ("a format character does not make a word of two", "refund\u200bs", ()),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in LATIN_BOUNDARIES], ids=[n for n, _, _ in LATIN_BOUNDARIES]
)
def test_latin_whole_word_matching_keeps_its_boundaries(text, expected):
    s = KeywordScanner(
        [
            KeywordListSpec(
                key="k",
                match="word",
                terms=("refund", "chargeback", "投诉"),
                fold_traditional=True,
                ignore_cjk_gaps=True,
                ignore_format=True,
            )
        ]
    )
    found = s.named_hits(s.scan(normalize_text(text))[1]).get("k", ())
    assert tuple(t for t in found if t.isascii()) == expected


def test_the_options_change_nothing_for_a_list_without_cjk_terms():
    punctuation = scanner(terms=("!!", "refund"))
    assert hits(punctuation, "投!!诉 refund") == ("!!", "refund")


def test_regex_lists_are_not_folded_or_joined():
    s = scanner(match="regex", terms=("投诉",))
    assert hits(s, "我要投訴") == ()
    assert hits(s, "我要投 诉") == ()
    assert hits(s, "我要投诉") == ("投诉",)


def test_lists_with_different_options_on_one_point_each_read_their_own_way():
    s = KeywordScanner(
        [
            modern("both", "substring", ("投诉",)),
            modern("fold", "substring", ("投诉",), gaps=False),
            modern("none", "substring", ("投诉",), fold=False, gaps=False),
            KeywordListSpec(key="legacy", match="substring", terms=("投诉",)),
        ]
    )
    named = lambda text: set(s.named_hits(s.scan(normalize_text(text))[1]))  # noqa: E731
    assert named("投 訴") == {"both"}
    assert named("投訴") == {"both", "fold"}
    assert named("投\u200b诉") == {"both", "fold", "none"}
    assert named("投诉") == {"both", "fold", "none", "legacy"}


# --- The snapshot: options are part of the revision ----------------------------------------------------


def test_a_snapshot_list_without_the_options_is_a_revision_from_before():
    old = keyword_list_spec({"key": "k", "match": "substring", "terms": ["投诉"]})
    assert (old.fold_traditional, old.ignore_cjk_gaps, old.ignore_format) == (False, False, False)
    new = keyword_list_spec(
        {"key": "k", "match": "substring", "fold_traditional": False, "ignore_cjk_gaps": False, "terms": ["投诉"]}
    )
    assert (new.fold_traditional, new.ignore_cjk_gaps, new.ignore_format) == (False, False, True)


# --- The ignorable set is what Unicode says it is ------------------------------------------------------


def test_the_ignorable_characters_are_the_format_characters_and_variation_selectors():
    """Written out in the module so matching does not move with the interpreter's Unicode version;
    this checks the list against the Unicode data of the Python running the tests."""
    expected = {
        chr(cp)
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) == "Cf"
        or 0xFE00 <= cp <= 0xFE0F
        or 0xE0100 <= cp <= 0xE01EF
        or 0x180B <= cp <= 0x180F
        or cp == 0x34F
    }
    listed = {chr(cp) for cp in range(0x110000) if _IGNORABLE.fullmatch(chr(cp))}
    assert listed == expected


# --- Properties ---------------------------------------------------------------------------------------

IGNORABLE = st.sampled_from(
    ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u200e", "\u200f", "\u202e", "\ufe0f", "\U000e0041"]
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, inserts=st.lists(st.tuples(st.integers(0, 80), IGNORABLE), max_size=8))
def test_inserting_format_characters_anywhere_never_changes_what_hits(text, inserts):
    s = KeywordScanner(
        [
            modern("cjk", "substring", CJK_TERMS),
            modern("latin", "word", LATIN_TERMS),
        ]
    )
    plain = f"{text} 我要投诉 refund"
    spiked = plain
    for at, ch in sorted(inserts, reverse=True):
        at = min(at, len(spiked))
        spiked = spiked[:at] + ch + spiked[at:]
    assert s.scan(normalize_text(spiked))[0] == s.scan(normalize_text(plain))[0]


GAP = st.text(st.sampled_from(" -._/、。·，！？*~\t\u3000😡"), min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    before=TEXT,
    after=TEXT,
    term=st.sampled_from(["投诉", "报警", "媒体曝光", "投訴", "報警", "媒體曝光"]),
    gaps=st.lists(GAP, min_size=3, max_size=3),
)
def test_a_term_split_by_gaps_and_spelt_in_traditional_always_hits(before, after, term, gaps):
    spelt = term[0] + "".join(g + ch for g, ch in zip(gaps, term[1:], strict=False))
    s = scanner()
    assert fold_traditional(term) in {fold_traditional(t) for t in hits(s, before + spelt + after)}


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_the_reading_steps_are_idempotent(text):
    for step in (strip_ignorable, fold_traditional, join_cjk):
        once = step(text)
        assert step(once) == once

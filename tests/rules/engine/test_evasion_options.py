"""The keyword evasion options of issue 21 (rules.engine.evasion, pinyin, words): each on and off, the
segmented mode, unless phrases, the name of the reading that made a hit, the pinned tables, properties.

The options apply the same way to terms and input: a term always matches itself, under every combination.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine import evasion, pinyin
from rules.engine.compiler import keyword_list_spec
from rules.engine.evasion import EVASION_OPTIONS
from rules.engine.keywords import KeywordListSpec, KeywordScanner
from rules.engine.normalize import _IGNORABLE, normalize_text
from rules.engine.words import word_edges
from tests.support.engine import ALL_ON, EVASION_TERMS, hits, scanner

TERMS = EVASION_TERMS


# --- Each option: what it catches, and that turning it off gives that up -------------------------------

CAUGHT = [
    # (option, text, term)
    ("ignore_invisible", "我要投\u3164诉", "投诉"),
    ("ignore_invisible", "我要投\u115f诉", "投诉"),
    ("ignore_invisible", "我要投\u1160诉", "投诉"),
    ("ignore_invisible", "我要投\uffa0诉", "投诉"),  # NFKC makes it U+3164
    ("ignore_invisible", "我要\u202e诉投\u202c", "投诉"),  # shown as 投诉
    ("ignore_invisible", "打1\u28002315", "12315"),
    ("fold_variants", "投𧦡", "投诉"),
    ("fold_variants", "投愬", "投诉"),
    ("fold_variants", "媒体曝灮", "媒体曝光"),
    ("fold_confusables", "call the p\u043elice", "police"),  # Cyrillic о
    ("fold_confusables", "ᴘᴏʟɪᴄᴇ", "police"),
    ("fold_confusables", "p0lice", "police"),
    ("fold_confusables", "p.o.l.i.c.e", "police"),
    ("fold_confusables", "po-lice", "police"),
    ("fold_confusables", "p o l i c e", "police"),
    ("fold_digits", "打١٢٣١٥", "12315"),
    ("fold_digits", "打१२३१५", "12315"),
    ("fold_digits", "打一二三一五", "12315"),
    ("fold_digits", "打幺二三幺五", "12315"),
    ("fold_digits", "打1\ufe0f\u20e32\ufe0f\u20e33\ufe0f\u20e31\ufe0f\u20e35\ufe0f\u20e3", "12315"),
    ("fold_digits", "打1 2 3 1 5", "12315"),
    ("fold_digits", "打123-15", "12315"),
    ("fold_digits", "打I2315", "12315"),
    ("fold_digits", "打1231S", "12315"),
    ("decode_escapes", "&#25237;&#35785;", "投诉"),
    ("decode_escapes", "&#x62a5;&#x8b66;", "报警"),
    ("decode_escapes", "%E6%8A%95%E8%AF%89", "投诉"),
    ("decode_escapes", "\\u6295\\u8bc9", "投诉"),
    ("bridge_cjk", "投x诉", "投诉"),
    ("bridge_cjk", "投1诉", "投诉"),
    ("bridge_cjk", "投の诉", "投诉"),
    ("bridge_cjk", "投ㄊ诉", "投诉"),
    ("match_pinyin", "头诉", "投诉"),
    ("match_pinyin", "投苏", "投诉"),
    ("match_pinyin", "抱警", "报警"),
    ("match_pinyin", "媒体暴光", "媒体曝光"),
    ("match_pinyin", "wo yao tousu", "投诉"),
    ("match_pinyin", "TouSu", "投诉"),
    ("match_pinyin", "baojing", "报警"),
]


@pytest.mark.parametrize(("option", "text", "term"), CAUGHT, ids=[f"{o}:{t}" for o, t, _ in CAUGHT])
def test_each_option_catches_its_evasion_on_its_own(option, text, term):
    # Options overlap (pinyin also reads through a filler between two characters), so each is tried alone.
    off = dict.fromkeys(ALL_ON, False)
    assert term in hits(scanner(), text)
    assert term in hits(scanner(**{**off, option: True}), text)
    assert term not in hits(scanner(**off), text)


@pytest.mark.parametrize("match", ["substring", "word", "segmented"])
def test_a_list_with_no_options_matches_none_of_them(match):
    off = dict.fromkeys(ALL_ON, False)
    s = scanner(match=match, **off)
    assert [text for _, text, term in CAUGHT if term in hits(s, text)] == []


# --- Benign near-collisions ----------------------------------------------------------------------------

NOT_HITS = [
    ("烟雾报警器坏了", "segmented"),
    ("起诉书模板", "segmented"),
    ("这篇文章的媒体曝光度很高", "segmented"),
    ("日报、警报", "segmented"),
    ("日报警报", "segmented"),
    ("请报经理审批", "segmented"),  # 报经 sounds like 报警, but 经理 is the word
    ("我们在这里投宿", "segmented"),  # 投宿 sounds like 投诉, and is a word of its own
    ("订单号2023123156", "substring"),  # a numeric term read with fold_digits is a whole number
    ("电话13812315678", "substring"),
    ("which policy covers this", "substring"),
]


@pytest.mark.parametrize(("text", "match"), NOT_HITS)
def test_near_collisions_do_not_hit(text, match):
    assert hits(scanner(match=match), text) == ()


def test_segmented_matching_still_sees_a_keyword_split_by_punctuation_or_a_letter():
    assert hits(scanner(), "我要投、诉") == ("投诉",)
    assert hits(scanner(), "我要报ㄅ警了") == ("报警",)
    assert hits(scanner(match="substring"), "烟雾报警器") == ("报警",)  # substring mode keeps its meaning


def test_a_numeric_term_without_fold_digits_still_matches_inside_a_longer_number():
    assert hits(scanner(match="substring", fold_digits=False), "订单号2023123156") == ("12315",)


# --- unless ----------------------------------------------------------------------------------------------


def test_a_hit_inside_an_unless_phrase_does_not_count_but_one_elsewhere_does():
    s = scanner(unless=("不是要投诉",))
    assert hits(s, "我不是要投诉，只是问一下流程") == ()
    assert hits(s, "我不是要投诉，我要报警") == ("报警",)
    assert hits(s, "我不是要投诉，但我还是要投诉") == ("投诉",)
    # The phrase is read like the terms: its Traditional and spaced-out forms are the phrase too.
    assert hits(s, "我不是要投訴") == ()
    assert hits(s, "我不 是 要 投 诉") == ()


def test_one_list_with_and_without_unless_on_one_point_has_a_bit_for_each():
    lists = [
        KeywordListSpec(key="k", match="substring", terms=("投诉",), ignore_format=True),
        KeywordListSpec(key="k", match="substring", terms=("投诉",), ignore_format=True, unless=("不是要投诉",)),
    ]
    s = KeywordScanner(lists)
    assert s.scan(normalize_text("我不是要投诉"))[0] == 0b01
    assert s.scan(normalize_text("我要投诉"))[0] == 0b11


# --- Which reading made the hit ------------------------------------------------------------------------

VIA = [
    ("我要投诉", "投诉"),
    ("&#25237;&#35785;", "投诉 via decoding"),
    ("投\u3164诉", "投诉 via invisible characters"),
    ("投訴", "投诉 via Traditional forms"),
    ("投愬", "投诉 via variant characters"),
    ("p0lice", "police via confusables"),
    ("一二三一五", "12315 via digits"),
    ("投 诉", "投诉 via gaps"),
    ("投x诉", "投诉 via bridging"),
    ("头诉", "投诉 via pinyin"),
]


@pytest.mark.parametrize(("text", "shown"), VIA)
def test_the_explained_hit_names_the_reading_that_made_it(text, shown):
    s = scanner()
    normalized = normalize_text(text)
    assert s.explained_hits(normalized, s.scan(normalized)[1]) == {"k": (shown,)}


# --- Revisions: a snapshot without the options is one from before them --------------------------------


def test_a_snapshot_list_without_the_new_options_has_them_off_and_with_them_as_written():
    old = keyword_list_spec({"key": "k", "terms": ["投诉"], "fold_traditional": True, "ignore_cjk_gaps": True})
    assert not any(getattr(old, o) for o in EVASION_OPTIONS)
    new = keyword_list_spec({"key": "k", "terms": ["投诉"], **dict.fromkeys(EVASION_OPTIONS, True)}, ("不是要投诉",))
    assert all(getattr(new, o) for o in EVASION_OPTIONS) and new.unless == ("不是要投诉",)


# --- The tables are pinned: they are part of what a revision's matching means ---------------------------


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


PINNED = {
    # rules/engine/data/variants.tsv: update with the table (and a corpus line for the evasion it catches).
    # 2026-12-01: 訢 and 䜣 (OpenCC's fold of 訢) → 诉, a look-alike of 訴.
    "variants": "cc68eca2221e4d9341694208971d658448e921d6d89ded095bf31f7b2620819b",
    # confusable-homoglyphs 3.3.1; 2026-12-02: a capital's look-alike given to its small letter (ΡΟLΙCΕ).
    "confusables": "205c146b3d6db1182b481d6cb2690f6835d28bbf3f160bb0a21e301fd10705f5",
    # pypinyin 0.55.0
    "pinyin": "d98fc643caded6abc6300e72ea588a9bb14fab4d0fab467324017ca93a57bf10",
    # pypinyin 0.55.0's zhuyin spelling of every syllable (zhuyin read as pinyin, 2026-12-01)
    "zhuyin": "7cfd9b43b51da231368ddc488bf4003ca090f60982911e01cb8acb8dcf8bc2b7",
    # 2026-12-02: enclosed digits NFKC keeps (⓵ ❶ ➀ ➊), bopomofo ㄧ for 一, the Hangzhou numerals 〡-〩.
    "digits": "86ae29c27abc28bc3b78e37ec88d71620b4d4e26b51cc25d67b678923201278e",
    "invisible": "f644e5b105e5eb58873378a1cf4324add16ae5a8d0011dbd276ab4ab630e5c0a",
    # 2026-12-01: 报警系统, 报警装置 (compounds) and 起速 (a word that sounds like 起诉).
    # 2026-12-02: 报警主机, 报警功能, 报警按钮, 报警键, 自媒体 (compounds) and 骑速 (sounds like 起诉).
    "segmenter_words": "0a326f8a4c4775b0e9e874fb3db8bb76e174ff4f9a07b3e0005c17dce5144040",
}


def test_the_tables_are_pinned():
    """Upgrade confusable-homoglyphs, pypinyin or rjieba deliberately: a changed table changes how old
    decisions replay. Update the digest here with a note of what changed."""
    found = {
        "variants": _digest(sorted(evasion.variant_table().items())),
        "confusables": _digest(sorted(evasion.confusable_table().items())),
        "pinyin": _digest(sorted(pinyin.readings().items())),
        "zhuyin": _digest(sorted(pinyin.zhuyin_syllables().items())),
        "digits": _digest(sorted(evasion._DIGITS.items())),
        "invisible": _digest(evasion.INVISIBLE_RANGES),
        "segmenter_words": hashlib.sha256(
            files("rules.engine").joinpath("data", "segmenter_words.txt").read_bytes()
        ).hexdigest(),
    }
    assert found == PINNED


# rjieba 0.2.2 with data/segmenter_words.txt: its dictionary ships inside the package, so it is pinned by
# what it does with sentences near the keywords.
SEGMENTED = {
    "烟雾报警器坏了": ["烟雾", "报警器", "坏", "了"],
    "我不是要投诉，只是问一下流程": ["我", "不是", "要", "投诉", "，", "只是", "问", "一下", "流程"],
    "照片曝光度太高": ["照片", "曝光度", "太高"],
    "日报、警报": ["日报", "、", "警报"],
    "我会找媒体曝光你们": ["我会", "找", "媒体", "曝光", "你们"],
    "起诉书模板": ["起诉书", "模板"],
    "我已经准备好起诉书了": ["我", "已经", "准备", "好", "起诉书", "了"],
    "汽车防盗报警系统": ["汽车", "防盗", "报警系统"],
    "我投，诉求很简单": ["我", "投", "，", "诉求", "很", "简单"],
}


@pytest.mark.parametrize("sentence", sorted(SEGMENTED))
def test_the_segmenter_is_pinned_by_what_it_does(sentence):
    words = SEGMENTED[sentence]
    expected = {0}
    for w in words:
        expected.add(max(expected) + len(w))
    assert word_edges(sentence) == expected


def test_the_invisible_set_holds_every_format_character_and_the_hangul_fillers():
    listed = {chr(cp) for a, b in evasion.INVISIBLE_RANGES for cp in range(a, b + 1)}
    formats = {chr(cp) for cp in range(0x110000) if _IGNORABLE.fullmatch(chr(cp))}
    assert formats <= listed
    assert {"\u3164", "\u115f", "\u1160", "\uffa0", "\u2800"} <= listed


def test_the_digit_runs_are_unicode_s_decimal_digits():
    """Written out so matching does not move with the interpreter; checked against its Unicode data."""
    zeros = [
        cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Nd" and unicodedata.decimal(chr(cp)) == 0
    ]
    assert tuple(z for z in zeros if unicodedata.unidata_version <= "15") == tuple(
        z for z in evasion.DIGIT_ZEROS if z in zeros
    )
    assert all(unicodedata.decimal(chr(z + k)) == k for z in evasion.DIGIT_ZEROS if z in zeros for k in range(10))


# --- Properties ------------------------------------------------------------------------------------------

OPTION_SETS = st.fixed_dictionaries({o: st.booleans() for o in ALL_ON})
TERM = st.sampled_from(["投诉", "报警", "媒体曝光", "12315", "police", "refund", "投訴", "头诉", "ab12", "退款"])
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(options=OPTION_SETS, term=TERM, match=st.sampled_from(["substring", "word", "segmented"]))
def test_a_term_always_matches_itself_under_every_option_combination(options, term, match):
    s = KeywordScanner([KeywordListSpec(key="k", match=match, terms=(term,), ignore_format=True, **options)])
    assert hits(s, term) == (normalize_text(term),)


@settings(max_examples=200, deadline=None)
@given(options=OPTION_SETS, text=TEXT, match=st.sampled_from(["substring", "word", "segmented", "regex"]))
def test_any_text_scans_under_any_options_without_raising(options, text, match):
    terms = (r"\d{5}",) if match == "regex" else TERMS
    s = KeywordScanner(
        [KeywordListSpec(key="k", match=match, terms=terms, ignore_format=True, unless=("不是要投诉",), **options)]
    )
    normalized = normalize_text(text)
    mask, found = s.scan(normalized)
    assert bool(mask) == bool(found)
    s.explained_hits(normalized, found)


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_the_new_reading_steps_are_idempotent(text):
    text = normalize_text(text)
    for step in (evasion.strip_invisible, evasion.fold_variants, evasion.bridge_cjk):
        once = step(text)
        assert step(once) == once


@pytest.mark.parametrize("char", sorted("0134578@$|!¢€"))
def test_every_digit_or_symbol_read_as_a_letter_has_its_letter(char):
    """A Latin word with any of them inside reads as letters (found by the benchmark: 8 had no letter)."""
    assert evasion.skeleton(f"a{char}b") == evasion.skeleton(f"a{evasion._LEET[char]}b")


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from("投诉报警ab1 -、。「」_😡\u3000ㄊの"), max_size=30))
def test_the_fast_gap_pattern_drops_what_the_plain_one_does(text):
    from rules.engine.normalize import _CJK_GAP, join_cjk

    assert join_cjk(text) == _CJK_GAP.sub("", text)


def test_a_hit_recorded_earlier_and_no_longer_in_the_text_is_named_without_a_reading():
    """A replay of masked input brings its hits along; no reading made them, so none is named (found by the
    API corpus: a masked 12315 came out "via pinyin")."""
    s = scanner()
    assert s.explained_hits(normalize_text("打 [email]"), {0: ["12315"]}) == {"k": ("12315",)}
    assert s.explained_hits(normalize_text("打 [email]"), {0: ["投诉"]}) == {"k": ("投诉",)}

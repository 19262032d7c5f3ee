"""The readings added for the independent adversarial pass (issue 21): tone marks, zhuyin, ``\\U`` and ``%u``
escapes, Latin diacritics, doubled and masked letters, decimal points, identifier labels, gaps across
punctuation, documents of a keyword, names. Each with the option that carries it off, and properties.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine import evasion, pinyin
from rules.engine.normalize import CJK_CHARS, normalize_text
from tests.support.engine import ALL_ON, hits, scanner

CAUGHT = [
    # (option carrying the reading, text, term)
    ("match_pinyin", "我要tóusù", "投诉"),
    ("match_pinyin", "我要bào jǐng了", "报警"),
    ("match_pinyin", "我要ㄊㄡˊㄙㄨˋ", "投诉"),
    ("match_pinyin", "ㄅㄠˋㄐㄧㄥˇ", "报警"),
    ("decode_escapes", "\\U00006295\\U00008bc9", "投诉"),
    ("decode_escapes", "%u62a5%u8b66", "报警"),
    ("fold_confusables", "call the pölice", "police"),
    ("fold_confusables", "call the po\u0301lice", "police"),
    ("fold_confusables", "call the pollice", "police"),
    ("fold_confusables", "call the p*lice", "police"),
    ("fold_confusables", "call the polic*", "police"),
    ("fold_confusables", "call the po*lice", "police"),
    ("fold_variants", "我要起訢", "起诉"),
]


@pytest.mark.parametrize(("option", "text", "term"), CAUGHT, ids=[f"{o}:{t}" for o, t, _ in CAUGHT])
def test_each_reading_catches_its_evasion_and_needs_its_option(option, text, term):
    assert term in hits(scanner(), text)
    assert term not in hits(scanner(**{option: False}), text)


@pytest.mark.parametrize(
    "text",
    [
        "价格是123.15元吗",
        "这台电脑12,315元能分期吗",
        "我12.31 5点下的单",
        "单价1231.5",
        "总价12315.50元",
        "订单号是12315",
        "订单编号：12315",
        "order no. 12315",
        "我投，诉求很简单",
        "有没有起诉书模板",
        "投诉信范文",
        "收件人鲍静，电话稍后给",
        "这辆电动车起速怎么样",
        "汽车防盗报警系统",
    ],
)
def test_near_collisions_of_the_new_readings_do_not_hit(text):
    assert hits(scanner(), text) == ()


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("打1.2.3.1.5", "12315"),  # every digit apart: a number spelt out
        ("打1 2 3 1 5", "12315"),
        ("订单号是123，我要打12315", "12315"),  # the label is another number's
        ("我已经准备好起诉书了，法院见", "起诉"),
        ("准备起诉状告你们", "起诉"),
        ("投诉信怎么写", "投诉"),  # someone about to complain
        ("我要投、诉", "投诉"),
        ("我要报ㄅ警了", "报警"),  # a bridged letter is no gap
        ("POLICE!!!", "police"),
        ("p*o*l*i*c*e", "police"),
    ],
)
def test_what_the_new_rules_must_still_hand_over(text, term):
    assert term in hits(scanner(), text)


def test_the_document_rule_is_segmented_mode_s_own():
    assert hits(scanner(match="substring"), "有没有起诉书模板") == ("起诉",)


# --- Properties ------------------------------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
MIXED = st.text(st.sampled_from("投诉报警ab oóöü\u0301ṕ*!.,1235ㄊㄡˊㄙㄨˋ、，。"), max_size=30)
_CJK = re.compile(f"[{CJK_CHARS}]")


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(TEXT, MIXED))
def test_the_latin_readings_are_idempotent_and_keep_every_cjk_character(text):
    text = normalize_text(text)
    for step in (evasion.strip_latin_marks, evasion.skeleton, evasion.fold_digits):
        once = step(text)
        assert step(once) == once
    # Dropping marks and reading the skeleton never removes or changes a CJK character.
    assert _CJK.findall(evasion.strip_latin_marks(text)) == _CJK.findall(text)
    assert _CJK.findall(evasion.skeleton(text)) == _CJK.findall(text)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(TEXT, MIXED))
def test_the_pinyin_walk_reads_what_the_fast_reading_does_and_places_every_letter(text):
    text = normalize_text(text)
    # Text without tone marks or zhuyin is read with str.translate, not walked: the two agree.
    spoken, where, han = pinyin._walk(text)
    assert spoken == pinyin.read_pinyin(text)
    assert len(where) == len(han) == len(spoken)
    for k, letter in enumerate(spoken):
        assert (where[k] == -1) == (letter == pinyin.BREAK)


@settings(max_examples=300, deadline=None)
@given(
    groups=st.lists(st.text("0123456789", min_size=1, max_size=4), min_size=2, max_size=4),
    mark=st.sampled_from(".,"),
)
def test_digits_are_never_joined_across_a_decimal_point_or_thousands_separator(groups, mark):
    text = mark.join(groups)
    folded = evasion.fold_digits(text)
    if any(len(g) > 1 for g in groups):
        assert folded == text
    else:
        assert folded == "".join(groups)


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_a_message_scans_with_every_reading_on_without_raising(text):
    s = scanner(**ALL_ON)
    normalized = normalize_text(text)
    mask, found = s.scan(normalized)
    assert bool(mask) == bool(found)
    s.explained_hits(normalized, found)


HOMOPHONES = "头投偷诉苏速起七启抱鲍暴报警井静镜媒美体题曝光广我要你们的" + "，、 。!-" + "\u9fff\u4dbf"


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(TEXT, st.text(st.sampled_from(HOMOPHONES), max_size=20)))
def test_the_pinyin_gate_never_hides_a_hit_the_whole_reading_finds(text):
    gated = scanner()
    ungated = scanner()
    for group in ungated._pinyin:
        group.gate = None
    normalized = normalize_text(text)
    assert gated.scan(normalized) == ungated.scan(normalized)


def test_a_list_of_many_terms_has_no_pinyin_gate():
    many = tuple(f"投{chr(0x4E00 + k)}" for k in range(pinyin.GATED_TERMS_AT_MOST + 1))
    assert pinyin.han_gate(many) is None
    assert pinyin.may_be_heard("我想查一下订单", None)

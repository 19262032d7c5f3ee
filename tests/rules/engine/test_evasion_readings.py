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
from rules.engine.negation import AUXILIARIES, NEGATORS, negated
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
    # The third pass (2026-12-02).
    ("fold_digits", "打⓵⓶⓷⓵⓹", "12315"),
    ("fold_digits", "打❶❷❸❶❺", "12315"),
    ("fold_digits", "打⑴⑵⑶⑴⑸", "12315"),
    ("fold_digits", "我准备打12з15", "12315"),
    ("fold_digits", "我要打ㄧ二三ㄧ五", "12315"),
    ("fold_confusables", "calling ΡΟLΙCΕ now", "police"),
    ("fold_confusables", "再不退款我就叫poli¢e", "police"),
    ("fold_confusables", "我要叫polic€来", "police"),
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
        "我付了12315元，发票怎么开",
        "收件地址是人民路12315号",
        "花了¥12315",
        "我买的Police牌太阳镜",
        "The Police乐队的唱片",
        "这款相机支持哪些存储媒体？曝光补偿范围多少？",
        "这个补光灯适合自媒体，曝光不足能调吗",
        "这款老人机有一键报警功能吗",
        "山地车的骑速能到多少",
        "选项(1)和(2)都行",
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
        ("打12315号码查一下", "12315"),  # 号码 is no unit
        ("我要拨12315号", "12315"),  # what someone dials is the hotline
        ("我要打报警电话", "报警"),
        ("找媒体、曝光你们", "媒体曝光"),
        ("报_警了，别再给我打电话", "报警"),
        ("police, brand new phone stolen", "police"),  # a brand's marker only right after the word
        ("the police brandished nothing", "police"),
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


# --- Negated hits (``unless_negated``) -------------------------------------------------------------------

NEGATED = [
    "放心，不会投诉你的",
    "没有要起诉的意思，就是想要个说法",
    "我不打算起诉，只想把钱退回来",
    "不用报警，包裹找到了",
    "我不会找媒体曝光的",
    "不需要打12315，你们处理好就行",
    "我从来不投诉快递员，这次也不会",
    "我并不想报警",
    "无需报警，东西找到了",
]
STILL_HITS = [
    "不，我要投诉",
    "不，要报警",  # a list joining gaps reads 不要报警; the negation is read as written
    "不投诉不行了",
    "我不是开玩笑，我要投诉",
    "不是要退款，是要投诉",
    "不得不报警了",
    "不是不想起诉",
    "难道我不会起诉吗？",
    "别以为我不敢找媒体曝光",
    "不报警你们不会管的",
    "要不要我打12315",
    "看我不投诉死你们",
    "我不能投诉吗",
    "你们不让我投诉",
]


@pytest.mark.parametrize("text", NEGATED)
def test_a_hit_its_clause_negates_does_not_count_with_unless_negated(text):
    assert hits(scanner(), text) != ()
    assert hits(scanner(unless_negated=True), text) == ()


@pytest.mark.parametrize("text", STILL_HITS)
def test_a_negator_that_does_not_negate_the_hit_leaves_it_counted(text):
    assert hits(scanner(unless_negated=True), text) != ()


def test_negated_hits_are_dropped_for_the_pinyin_reading_too():
    assert hits(scanner(), "我不会头诉你的") == ("投诉",)
    assert hits(scanner(unless_negated=True), "我不会头诉你的") == ()
    assert hits(scanner(unless_negated=True), "我要头诉") == ("投诉",)


CLAUSE = st.text(st.sampled_from("我你要不没是想会打算去找不得吗？，。投诉报警a1 "), max_size=12)


@settings(max_examples=400, deadline=None)
@given(before=CLAUSE, after=CLAUSE, options=st.fixed_dictionaries({o: st.booleans() for o in ALL_ON}))
def test_negation_only_ever_drops_hits(before, after, options):
    text = before + "投诉" + after
    assert set(hits(scanner(unless_negated=True, **options), text)) <= set(hits(scanner(**options), text))


@settings(max_examples=400, deadline=None)
@given(before=CLAUSE, mark=st.sampled_from("，。！？、,;"), after=CLAUSE)
def test_no_negation_reaches_across_punctuation(before, mark, after):
    """Whatever comes before a mark, a keyword right after it is not negated (不，投诉 is a complaint)."""
    assert negated(before + mark + "投诉" + after, len(before) + 1, len(before) + 3) is False


@settings(max_examples=400, deadline=None)
@given(
    negator=st.sampled_from(NEGATORS),
    auxiliaries=st.lists(st.sampled_from(AUXILIARIES), max_size=3),
    doubling=st.sampled_from(["不得", "不能", "不是", "不会"]),
)
def test_a_direct_negation_counts_and_a_double_one_does_not(negator, auxiliaries, doubling):
    run = negator + "".join(auxiliaries)
    assert negated(run + "投诉", len(run), len(run) + 2)
    assert not negated(doubling + run + "投诉", len(doubling + run), len(doubling + run) + 2)
    assert not negated(run + "投诉不行", len(run), len(run) + 2)

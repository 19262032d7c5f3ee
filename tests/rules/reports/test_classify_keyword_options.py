"""Shadowed-rule analysis with issue 21's keyword options: a list implies another only when both read the
input the same way, and an unless phrase on the wider condition breaks the implication."""

from __future__ import annotations

import pytest

from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.reports.classify import _Config, condition_implies


def config(narrow: dict, wide: dict) -> _Config:
    return _Config({"keyword_lists": [{"key": "narrow", **narrow}, {"key": "wide", **wide}]})


def implies(narrow: dict, wide: dict, **conditions) -> bool:
    return condition_implies(
        config(narrow, wide),
        {"input_contains": "narrow", **conditions.get("n", {})},
        {"input_contains": "wide", **conditions.get("w", {})},
    )


def test_a_longer_term_implies_a_shorter_one_in_substring_lists_without_the_options():
    assert implies({"terms": ["我要投诉"]}, {"terms": ["投诉"]})


@pytest.mark.parametrize("option", EVASION_OPTIONS)
def test_lists_reading_the_input_differently_do_not_imply_each_other(option):
    assert not implies({"terms": ["投诉"], option: True}, {"terms": ["投诉"]})


@pytest.mark.parametrize("option", ["fold_digits", "match_pinyin"])
def test_with_an_option_on_a_number_or_a_sound_implies_only_itself(option):
    # 123156 as a whole number does not hold 12315 as one; a homophone of 我要投诉 need not hold one of 投诉.
    assert not implies({"terms": ["123156"], option: True}, {"terms": ["12315"], option: True})
    assert implies({"terms": ["12315"], option: True}, {"terms": ["12315", "报警"], option: True})


def test_with_the_default_options_a_longer_term_still_implies_a_shorter_one_but_not_a_number():
    defaults = dict.fromkeys(("fold_traditional", "ignore_cjk_gaps"), True) | EVASION_DEFAULTS
    assert implies({"terms": ["我要投诉"], **defaults}, {"terms": ["投诉", "12315"], **defaults})
    assert not implies({"terms": ["打12315"], **defaults}, {"terms": ["12315"], **defaults})


def test_segmented_lists_imply_by_the_same_terms_only():
    assert not implies({"match": "segmented", "terms": ["报警器"]}, {"match": "segmented", "terms": ["报警"]})
    assert implies({"match": "segmented", "terms": ["报警"]}, {"match": "segmented", "terms": ["报警"]})


def test_an_unless_on_the_wider_condition_breaks_the_implication_one_on_the_narrower_does_not():
    same = {"terms": ["投诉"]}
    assert not implies(same, same, w={"unless": ["不是要投诉"]})
    assert implies(same, same, n={"unless": ["不是要投诉"]})


def test_dropping_negated_hits_on_the_wider_condition_breaks_the_implication_too():
    same = {"terms": ["投诉"]}
    assert not implies(same, same, w={"unless_negated": True})
    assert implies(same, same, n={"unless_negated": True})

"""Governance classification and static shadow detection on constructed configuration documents (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from rules.reports.classify import CONTROLLED, NAKED, PARTIAL, point_governance, shadowed_rules

NOW = dt.datetime(2026, 6, 15, 12, 0, tzinfo=dt.UTC)


def document(*points, lists=(), thresholds=None, machines=()):
    return {
        "version": 1,
        "thresholds": thresholds
        if thresholds is not None
        else [{"key": "min_confidence", "value": 0.65}, {"key": "strict_confidence", "value": 0.8}],
        "keyword_lists": list(lists),
        "points": list(points),
        "machines": list(machines),
    }


def rule(key, priority, *conditions, category="business", outcome="handoff", mode="enforce", match="all", **kw):
    return {
        "key": key,
        "priority": priority,
        "category": category,
        "match": match,
        "mode": mode,
        "outcome": outcome,
        "conditions": list(conditions),
        **kw,
    }


def point(*rules, whitelist=("answer",), outcomes=("handoff", "answer", "clarify"), key="p"):
    return {
        "key": key,
        "outcomes": list(outcomes),
        "candidate_whitelist": list(whitelist),
        "default_outcome": "clarify",
        "when_no_candidate": "ask",
        "rules": list(rules),
    }


KEYWORD = rule("complaint", 10, {"input_contains": "high_risk"}, category="compliance")
CONFIDENCE = rule(
    "low_confidence", 50, {"candidate_confidence_below": "min_confidence"}, category="quality", outcome="clarify"
)


def governance(p, **kw):
    return point_governance(p, document(p, **kw), now=NOW)


def test_a_point_with_an_enforcing_high_risk_rule_and_a_confidence_threshold_is_controlled():
    found = governance(point(KEYWORD, CONFIDENCE))
    assert found.kind == CONTROLLED
    assert found.reasons == (
        "a candidate is accepted only from the whitelist (answer) and only at a confidence of at least "
        "min_confidence (0.65): rule low_confidence",
        "high-risk branches are decided by hard rules: complaint",
    )


def test_a_point_whose_whitelist_is_empty_needs_no_confidence_threshold():
    found = governance(point(KEYWORD, whitelist=()))
    assert found.kind == CONTROLLED
    assert "no candidate is ever accepted: the candidate whitelist is empty" in found.reasons


def test_a_whitelisted_candidate_accepted_at_any_confidence_is_naked():
    found = governance(point(KEYWORD))
    assert found.kind == NAKED
    assert found.reasons[0].startswith("a candidate from the whitelist (answer) is accepted at any confidence")


def test_a_confidence_rule_in_shadow_mode_guards_nothing():
    shadow = {**CONFIDENCE, "mode": "shadow"}
    found = governance(point(KEYWORD, shadow))
    assert found.kind == NAKED
    assert "(rule low_confidence tests it but does not decide)" in found.reasons[0]


def test_a_confidence_rule_outside_its_effective_dates_guards_nothing():
    expired = {**CONFIDENCE, "effective_until": "2026-06-01T00:00:00Z"}
    assert governance(point(KEYWORD, expired)).kind == NAKED


def test_without_an_enforcing_high_risk_rule_the_point_is_partial():
    found = governance(point(CONFIDENCE))
    assert found.kind == PARTIAL
    assert "no high-risk rule (compliance, risk or hand-off) enforces at this point" in found.reasons


def test_a_high_risk_rule_in_shadow_mode_is_a_gap():
    found = governance(point({**KEYWORD, "mode": "shadow"}, CONFIDENCE))
    assert found.kind == PARTIAL
    assert "the high-risk rule complaint (a compliance rule) is in shadow mode: it does not decide" in found.reasons


def test_a_confidence_test_joined_with_another_condition_is_partial():
    conditional = rule(
        "low_confidence",
        50,
        {"candidate_confidence_below": "min_confidence"},
        {"session_state_in": ["init"]},
        category="quality",
        outcome="clarify",
    )
    found = governance(point(KEYWORD, conditional))
    assert found.kind == PARTIAL
    assert found.reasons[0].startswith("the candidate's confidence is tested only together with other conditions")
    any_of = {**conditional, "match": "any"}
    assert governance(point(KEYWORD, any_of)).kind == CONTROLLED


def test_a_whitelist_of_every_outcome_or_of_a_high_risk_outcome_is_partial():
    everything = governance(point(KEYWORD, CONFIDENCE, whitelist=("handoff", "answer", "clarify")))
    assert everything.kind == PARTIAL
    assert "the candidate whitelist admits every outcome of the point" in everything.reasons
    assert (
        "a candidate may choose handoff, the outcome of the high-risk rule complaint, without its conditions"
        in everything.reasons
    )


def test_a_rule_whose_outcome_hands_off_counts_as_high_risk():
    handing = rule("angry", 10, {"input_contains": "high_risk"}, category="business", outcome="handoff")
    p = {**point(handing, CONFIDENCE), "machine": "m", "state_map": {"handoff": "person"}}
    machines = [{"key": "m", "handoff": "person"}]
    assert governance(p, machines=machines).kind == CONTROLLED
    assert governance(point(handing, CONFIDENCE)).kind == PARTIAL


# --- static shadowing ----------------------------------------------------------------------------------

LISTS = [
    {"key": "high_risk", "match": "substring", "terms": ["投诉", "12315", "lawyer"]},
    {"key": "complaint_only", "match": "substring", "terms": ["投诉"]},
    {"key": "complaint_words", "match": "substring", "terms": ["我要投诉", "lawyers"]},
    {"key": "other", "match": "substring", "terms": ["退款"]},
    {"key": "complaint_word_mode", "match": "word", "terms": ["投诉"]},
]


def shadowed(*rules, thresholds=None):
    p = point(*rules)
    return [(s.key, s.by) for s in shadowed_rules(p, document(p, lists=LISTS, thresholds=thresholds))]


def test_the_same_keyword_list_and_no_other_condition_is_shadowed():
    later = rule("again", 20, {"input_contains": "high_risk"}, outcome="clarify")
    assert shadowed(KEYWORD, later) == [("again", "complaint")]


def test_a_narrower_keyword_list_is_shadowed_by_a_wider_one():
    subset = rule("subset", 20, {"input_contains": "complaint_only"})
    containing = rule("containing", 30, {"input_contains": "complaint_words"})
    assert shadowed(KEYWORD, subset, containing) == [("subset", "complaint"), ("containing", "complaint")]


def test_a_wider_list_or_another_list_or_another_match_mode_is_not_shadowed():
    narrow_first = rule("narrow", 10, {"input_contains": "complaint_only"})
    wide_later = rule("wide", 20, {"input_contains": "high_risk"})
    other = rule("refund", 30, {"input_contains": "other"})
    word = rule("word", 40, {"input_contains": "complaint_word_mode"})
    assert shadowed(narrow_first, wide_later, other, word) == []


def test_a_further_condition_only_narrows_the_later_rule():
    later = rule("complaint_in_init", 20, {"input_contains": "high_risk"}, {"session_state_in": ["init"]})
    assert shadowed(KEYWORD, later) == [("complaint_in_init", "complaint")]
    # ...but an earlier rule with a further condition does not always hold
    earlier = rule("first", 5, {"input_contains": "high_risk"}, {"session_state_in": ["init"]})
    assert shadowed(earlier, {**KEYWORD, "priority": 10}) == []


def test_only_enforcing_earlier_rules_shadow_and_off_rules_are_not_reported():
    shadow_first = {**KEYWORD, "mode": "shadow"}
    later = rule("again", 20, {"input_contains": "high_risk"})
    assert shadowed(shadow_first, later) == []
    assert shadowed(KEYWORD, {**later, "mode": "off"}) == []
    assert shadowed(KEYWORD, {**later, "mode": "shadow"}) == [("again", "complaint")]


def test_a_catch_all_shadows_everything_after_it():
    catch_all = rule("everything", 1)
    assert shadowed(catch_all, KEYWORD, CONFIDENCE) == [("complaint", "everything"), ("low_confidence", "everything")]


def test_confidence_thresholds_and_fact_comparisons_compare_their_values():
    lower = rule("very_low", 60, {"candidate_confidence_below": "min_confidence"})
    higher = rule("strict", 70, {"candidate_confidence_below": "strict_confidence"})
    strict_first = {**higher, "priority": 40}
    assert shadowed(strict_first, lower) == [("very_low", "strict")]
    assert shadowed(lower, higher) == []
    over_500 = rule("over_500", 10, {"fact": "amount", "op": ">", "value": 500})
    over_1000 = rule("over_1000", 20, {"fact": "amount", "op": ">=", "value": 1000})
    under = rule("under", 30, {"fact": "amount", "op": "<", "value": 100})
    assert shadowed(over_500, over_1000, under) == [("over_1000", "over_500")]


@pytest.mark.parametrize(
    ("earlier", "later", "expected"),
    [
        ({"candidate_in": ["answer", "clarify"]}, {"candidate_in": ["answer"]}, True),
        ({"candidate_in": ["answer"]}, {"candidate_in": ["answer", "clarify"]}, False),
        ({"candidate_not_in": ["answer"]}, {"candidate_not_in": ["answer", "clarify"]}, True),
        ({"session_state_in": ["a", "b"]}, {"session_state_in": ["b"]}, True),
        (
            {"time_window": {"from": "09:00", "to": "17:00", "tz": "UTC"}},
            {"time_window": {"from": "10:00", "to": "12:00", "tz": "UTC"}},
            False,
        ),
    ],
)
def test_condition_kinds(earlier, later, expected):
    found = shadowed(rule("first", 10, earlier), rule("second", 20, later))
    assert found == ([("second", "first")] if expected else [])


def test_an_earlier_rule_with_limited_dates_shadows_only_within_them():
    dated = {**KEYWORD, "effective_until": "2026-07-01T00:00:00Z"}
    later = rule("again", 20, {"input_contains": "high_risk"})
    assert shadowed(dated, later) == []
    assert shadowed(dated, {**later, "effective_until": "2026-06-20T00:00:00Z"}) == [("again", "complaint")]


def test_an_any_rule_is_shadowed_only_when_each_of_its_conditions_is():
    either = rule("either", 20, {"input_contains": "complaint_only"}, {"input_contains": "other"}, match="any")
    assert shadowed(KEYWORD, either) == []
    both_covered = rule("both", 20, {"input_contains": "complaint_only"}, {"input_contains": "high_risk"}, match="any")
    assert shadowed(KEYWORD, both_covered) == [("both", "complaint")]

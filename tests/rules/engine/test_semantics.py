"""Rule modes, effective dates, time windows, word boundaries and the whitelist gate."""

from __future__ import annotations

import datetime as dt

from rules.engine import Candidate, compile_config, evaluate
from rules.engine.conditions import KINDS
from rules.engine.request import SessionView
from tests.support.engine import NOON_UTC

MACHINE_FIELDS = [
    {"name": "receiver_phone", "type": "string", "pii": True},
    {"name": "retry_count", "type": "integer"},
]


def point_with(rules, *, lists=(), facts=None, whitelist=("a",), when_no_candidate="default"):
    snapshot = {
        "machines": [{"key": "m", "fields": MACHINE_FIELDS}],
        "thresholds": [{"key": "limit", "value": 10}],
        "keyword_lists": list(lists),
        "points": [
            {
                "key": "p",
                "facts": facts or {},
                "outcomes": ["a", "b", "c"],
                "candidate_whitelist": list(whitelist),
                "default_outcome": "c",
                "when_no_candidate": when_no_candidate,
                "machine": "m",
                "rules": rules,
            }
        ],
    }
    return compile_config(snapshot, revision=1).point("p")


def rule(key, priority, outcome="b", conditions=(), **kw):
    return {
        "key": key,
        "priority": priority,
        "category": "business",
        "outcome": outcome,
        "conditions": list(conditions),
        **kw,
    }


def test_shadow_rules_are_recorded_but_never_decide():
    p = point_with([rule("watch", 1, "b", mode="shadow"), rule("real", 5, "a")])
    d = evaluate(p, now=NOON_UTC)
    assert d.decision == "a" and d.rule.key == "real"
    assert [(m.key, m.shadow) for m in d.matched_rules] == [("watch", True), ("real", False)]
    only_shadow = evaluate(point_with([rule("watch", 1, "b", mode="shadow")]), now=NOON_UTC)
    assert (only_shadow.decision, only_shadow.ruled_by) == ("c", "default")


def test_off_rules_are_skipped_and_ties_break_by_key():
    p = point_with([rule("zeta", 5, "b"), rule("alpha", 5, "a"), rule("gone", 1, "c", mode="off")])
    d = evaluate(p, now=NOON_UTC)
    assert d.rule.key == "alpha"
    assert [m.key for m in d.matched_rules] == ["alpha", "zeta"]


def test_effective_dates_bound_a_rule():
    start = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    end = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    p = point_with(
        [rule("promo", 1, "a", effective_from="2026-12-01T00:00:00Z", effective_until="2026-12-02T00:00:00Z")]
    )
    assert evaluate(p, now=start - dt.timedelta(microseconds=1)).ruled_by == "default"
    assert evaluate(p, now=start).decision == "a"
    assert evaluate(p, now=end - dt.timedelta(microseconds=1)).decision == "a"
    assert evaluate(p, now=end).ruled_by == "default"


def test_time_window_across_midnight_in_the_rules_time_zone():
    window = {"time_window": {"from": "22:00", "to": "06:00", "tz": "Asia/Shanghai"}}
    p = point_with([rule("night", 1, "a", [window])])
    shanghai = dt.timezone(dt.timedelta(hours=8))

    def at(hour, minute=0):
        return evaluate(p, now=dt.datetime(2026, 11, 30, hour, minute, tzinfo=shanghai).astimezone(dt.UTC)).decision

    assert at(21, 59) == "c"
    assert at(22, 0) == "a"
    assert at(23, 30) == "a"
    assert at(3, 0) == "a"
    assert at(5, 59) == "a"
    assert at(6, 0) == "c"
    assert at(12, 0) == "c"


def test_time_window_within_a_day():
    p = point_with([rule("office", 1, "a", [{"time_window": {"from": "09:00", "to": "18:00", "tz": "UTC"}}])])
    assert evaluate(p, now=NOON_UTC).decision == "a"
    assert evaluate(p, now=NOON_UTC.replace(hour=18)).decision == "c"


def test_whole_word_lists_need_latin_word_boundaries_but_not_around_cjk():
    lists = [{"key": "w", "match": "word", "terms": ["refund", "退款"]}]
    p = point_with([rule("r", 1, "a", [{"input_contains": "w"}])], lists=lists)
    assert evaluate(p, text="I want a refund.", now=NOON_UTC).decision == "a"
    assert evaluate(p, text="refunds are slow", now=NOON_UTC).decision == "c"
    assert evaluate(p, text="nonrefund", now=NOON_UTC).decision == "c"
    assert evaluate(p, text="我要退款", now=NOON_UTC).decision == "a"


def test_regex_lists():
    lists = [{"key": "order_id", "match": "regex", "terms": [r"\bo\d{6}\b"]}]
    p = point_with([rule("r", 1, "a", [{"input_contains": "order_id"}])], lists=lists)
    d = evaluate(p, text="Order O123456 is late", now=NOON_UTC)
    assert d.decision == "a" and d.keyword_hits == {"order_id": ("o123456",)}
    assert evaluate(p, text="O12345", now=NOON_UTC).decision == "c"


def test_any_and_all_combinators_and_fact_operators():
    facts = {"amount": "number", "tier": "string", "tags": "string_list", "vip": "boolean"}
    p = point_with(
        [
            rule(
                "both",
                1,
                "a",
                [{"fact": "amount", "op": ">=", "threshold": "limit"}, {"fact": "vip", "op": "==", "value": True}],
            ),
            rule(
                "either",
                2,
                "b",
                [
                    {"fact": "tier", "op": "in", "value": ["gold", "silver"]},
                    {"fact": "tags", "op": "in", "value": ["fraud"]},
                ],
                match="any",
            ),
        ],
        facts=facts,
    )
    assert evaluate(p, facts={"amount": 10, "vip": True}, now=NOON_UTC).decision == "a"
    assert evaluate(p, facts={"amount": 9.99, "vip": True}, now=NOON_UTC).decision == "c"
    assert evaluate(p, facts={"tier": "gold"}, now=NOON_UTC).decision == "b"
    assert evaluate(p, facts={"tags": ["new", "fraud"]}, now=NOON_UTC).decision == "b"
    assert evaluate(p, facts={"tags": ["new"]}, now=NOON_UTC).decision == "c"
    # A condition on a fact the request did not send is false, never an error.
    assert evaluate(p, facts={}, now=NOON_UTC).decision == "c"


def test_a_text_fact_matches_a_pattern_ignoring_case_and_nothing_else_does():
    rules = [rule("order", 1, "a", [{"fact_matches": {"fact": "order_no", "pattern": r"^E\d{10}$"}}])]
    p = point_with(rules, facts={"order_no": "string"})

    def decision(value):
        return evaluate(p, facts={"order_no": value}, now=NOON_UTC).decision

    assert decision("E0123456789") == "a"
    assert decision("e0123456789") == "a"  # case is ignored, as for regex keyword terms
    assert decision("E012345678") == "c"
    assert decision("xE0123456789") == "c"  # anchored: the whole value
    # A missing fact, or a value of another type (possible only beyond the declared types), never holds.
    assert evaluate(p, facts={}, now=NOON_UTC).decision == "c"
    for other in (None, 1234567890, ["E0123456789"], True):
        assert decision(other) == "c"
    # Unanchored, the pattern is searched for anywhere in the value.
    anywhere = point_with(
        [rule("vip", 1, "a", [{"fact_matches": {"fact": "tag", "pattern": "vip"}}])], facts={"tag": "string"}
    )
    assert evaluate(anywhere, facts={"tag": "gold-VIP-2"}, now=NOON_UTC).decision == "a"


def test_the_confidence_boundary_is_not_below():
    snapshot = {
        "thresholds": [{"key": "min_confidence", "value": 0.65}],
        "keyword_lists": [],
        "points": [
            {
                "key": "p",
                "outcomes": ["a", "clarify"],
                "candidate_whitelist": ["a"],
                "default_outcome": "clarify",
                "rules": [rule("low", 1, "clarify", [{"candidate_confidence_below": "min_confidence"}])],
            }
        ],
    }
    p = compile_config(snapshot, revision=1).point("p")
    assert evaluate(p, candidate=Candidate("a", 0.65), now=NOON_UTC).decision == "a"
    assert evaluate(p, candidate=Candidate("a", 0.6499999), now=NOON_UTC).decision == "clarify"


def test_a_candidate_outside_the_whitelist_falls_back_to_the_default_even_without_a_rule():
    p = point_with([], whitelist=("a",))
    accepted = evaluate(p, candidate=Candidate("a", 0.9), now=NOON_UTC)
    assert (accepted.decision, accepted.ruled_by, accepted.overridden) == ("a", "llm_candidate", False)
    refused = evaluate(p, candidate=Candidate("b", 0.9), now=NOON_UTC)
    assert (refused.decision, refused.ruled_by, refused.overridden) == ("c", "default", True)
    stray = evaluate(p, candidate=Candidate("zzz", 0.9), now=NOON_UTC)
    assert stray.candidate_outside_outcomes is True and stray.decision == "c"


def test_when_no_candidate_default_answers_the_default():
    d = evaluate(point_with([], when_no_candidate="default"), now=NOON_UTC)
    assert (d.decision, d.ruled_by, d.needs_candidate) == ("c", "default", False)


def test_regex_terms_keep_their_case_and_may_carry_inline_flags():
    lists = [{"key": "codes", "match": "regex", "terms": [r"^\D{2}\d{4}$", r"(?s)退.款"]}]
    p = point_with([rule("r", 1, "a", [{"input_contains": "codes"}])], lists=lists)
    assert evaluate(p, text="AB1234", now=NOON_UTC).decision == "a"  # \D stays "not a digit"
    assert evaluate(p, text="123456", now=NOON_UTC).decision == "c"
    assert evaluate(p, text="退\n款", now=NOON_UTC).decision == "a"


def test_rules_grouped_under_their_keyword_lists_still_match_in_priority_order():
    # The native matcher tests rules that need a keyword list only when that list hit, group by group;
    # matched rules must still come out in priority order, interleaved with rules tested on every request.
    lists = [
        {"key": "k1", "match": "substring", "terms": ["投诉"]},
        {"key": "k2", "match": "substring", "terms": ["退款"]},
    ]
    facts = {"amount": "number"}
    rules = [
        rule("r40_k2", 40, "b", [{"input_contains": "k2"}]),
        rule("r10_k1", 10, "b", [{"input_contains": "k1"}, {"fact": "amount", "op": ">", "value": 5}]),
        rule("r20_any", 20, "a", [{"input_contains": "k1"}, {"input_contains": "k2"}], match="any"),
        rule("r30_fact", 30, "a", [{"fact": "amount", "op": ">", "value": 5}]),
        rule(
            "r5_any_mixed", 5, "b", [{"input_contains": "k2"}, {"fact": "amount", "op": "<", "value": 0}], match="any"
        ),
    ]
    p = point_with(rules, lists=lists, facts=facts)
    both = evaluate(p, text="我要投诉，还要退款", facts={"amount": 9}, now=NOON_UTC)
    assert [m.key for m in both.matched_rules] == ["r5_any_mixed", "r10_k1", "r20_any", "r30_fact", "r40_k2"]
    assert both.rule.key == "r5_any_mixed"
    assert both.reason == "r5_any_mixed: keyword 退款 (list k2)"
    only_k1 = evaluate(p, text="投诉", facts={"amount": 1}, now=NOON_UTC)
    assert [m.key for m in only_k1.matched_rules] == ["r20_any"]
    assert only_k1.reason == "r20_any: keyword 投诉 (list k1)"
    none = evaluate(p, text="你好", facts={"amount": 9}, now=NOON_UTC)
    assert [m.key for m in none.matched_rules] == ["r30_fact"]
    assert none.reason == "r30_fact: amount 9 > 5"


def test_a_reason_names_what_held_for_every_kind_of_condition():
    lists = [{"key": "risk", "match": "substring", "terms": ["投诉", "12315"]}]
    facts = {"amount": "number", "tier": "string"}
    # name -> (kind, condition, its words in the reason); every registered kind must have one.
    conditions = {
        "kw": ("input_contains", {"input_contains": "risk"}, "keyword 12315 (list risk)"),
        "threshold": ("fact", {"fact": "amount", "op": ">", "threshold": "limit"}, "amount 12.5 > limit 10"),
        "literal": ("fact", {"fact": "tier", "op": "in", "value": ["gold", "vip"]}, "tier 'gold' in ('gold', 'vip')"),
        "cand_in": ("candidate_in", {"candidate_in": ["b", "a"]}, "candidate a in a, b"),
        "cand_not_in": ("candidate_not_in", {"candidate_not_in": ["c", "b"]}, "candidate a not in b, c"),
        "wl": ("candidate_not_in_whitelist", {"candidate_not_in_whitelist": True}, "candidate a not in the whitelist"),
        "conf": (
            "candidate_confidence_below",
            {"candidate_confidence_below": "limit"},
            "confidence 0.50 below limit 10",
        ),
        "window": (
            "time_window",
            {"time_window": {"from": "09:00", "to": "18:30", "tz": "UTC"}},
            "time within 09:00–18:30 UTC",
        ),
        "state": ("session_state_in", {"session_state_in": ["s1", "s2"]}, "session state s1"),
        "pattern": ("fact_matches", {"fact_matches": {"fact": "tier", "pattern": "^GO"}}, "tier 'gold' matches /^GO/"),
        "field": (
            "session_field",
            {"session_field": "retry_count", "op": ">=", "threshold": "limit"},
            "session field retry_count 12 >= limit 10",
        ),
        # A personal field's value never goes into a reason.
        "pii_field": (
            "session_field",
            {"session_field": "receiver_phone", "pattern": "^1[3-9]"},
            "session field receiver_phone (personal data) matches /^1[3-9]/",
        ),
        "seen": (
            "session_keyword_seen",
            {"session_keyword_seen": "risk", "last": 5},
            "keyword list risk seen in the last 5 decisions of the session",
        ),
    }
    assert {kind for kind, _, _ in conditions.values()} == set(KINDS)
    request = {
        "text": "打了１２３１５",
        "candidate": Candidate(decision="a", confidence=0.5),
        "facts": {"amount": 12.5, "tier": "gold"},
        "session_state": "s1",
        "session": SessionView(
            {"retry_count": 12, "receiver_phone": "13800138000"}, (frozenset(), frozenset({"risk"}))
        ),
        "now": NOON_UTC,
    }
    for name, (_, condition, words) in conditions.items():
        p = point_with([rule(name, 1, "b", [condition])], lists=lists, facts=facts, whitelist=("c",))
        assert evaluate(p, **request).reason == f"{name}: {words}"
    # An "all" rule held on every condition; an "any" rule names only the alternatives that held.
    both = [conditions["kw"][1], conditions["state"][1], {"fact": "amount", "op": "<", "value": 0}]
    p = point_with([rule("all", 2, "b", both[:2]), rule("any", 1, "b", both, match="any")], lists=lists, facts=facts)
    d = evaluate(p, **request)
    assert d.reason == "any: keyword 12315 (list risk); session state s1"
    assert [m.key for m in d.matched_rules] == ["any", "all"]
    no_conditions = point_with([rule("always", 1, "b")])
    assert evaluate(no_conditions, now=NOON_UTC).reason == "always"

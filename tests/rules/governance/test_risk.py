"""What is high-risk, case by case (rules/governance/risk.py), on the after-sales demo configuration."""

from __future__ import annotations

import copy

import pytest

from rules.config.document.diff import config_diff
from rules.engine.evasion import EVASION_OPTIONS
from rules.governance.risk import change_risks, record_approval_note
from tests.support.documents import DEMO_DOCUMENT, machine, point, rule

DEMO = DEMO_DOCUMENT


def _risks(edit):
    after = copy.deepcopy(DEMO)
    edit(after)
    return [(r.record, r.why) for r in change_risks(DEMO, after, config_diff(DEMO, after))]


def threshold(doc, key):
    return next(t for t in doc["thresholds"] if t["key"] == key)


def keyword_list(doc, key):
    return next(kl for kl in doc["keyword_lists"] if kl["key"] == key)


def new_rule(key, priority, category="business", outcome="general_query", **extra):
    return {
        "key": key,
        "priority": priority,
        "category": category,
        "match": "all",
        "mode": "enforce",
        "outcome": outcome,
        "conditions": [{"candidate_in": ["product_info"]}],
        **extra,
    }


# --- thresholds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["value", "min", "max", "high_risk"])
def test_changing_a_high_risk_thresholds_value_bounds_or_flag_is_high_risk(field):
    new = {"value": 1000, "min": 1, "max": 200000, "high_risk": False}[field]
    risks = _risks(lambda d: threshold(d, "auto_refund_limit").__setitem__(field, new))
    assert risks == [("threshold auto_refund_limit", f"changes {field} of a high-risk threshold")]


def test_describing_a_high_risk_threshold_is_not():
    assert _risks(lambda d: threshold(d, "auto_refund_limit").__setitem__("description", "Refund cap")) == []


def test_flagging_a_threshold_high_risk_is_high_risk_and_an_unflagged_one_changes_freely():
    def add_low(d):
        d["thresholds"].append({"key": "wait", "value": 5, "high_risk": False})

    def edit_low(d):
        threshold(d, "wait")["value"] = 9

    base = copy.deepcopy(DEMO)
    add_low(base)
    after = copy.deepcopy(base)
    edit_low(after)
    assert change_risks(base, after, config_diff(base, after)) == []
    flagged = copy.deepcopy(base)
    threshold(flagged, "wait")["high_risk"] = True
    assert [r.why for r in change_risks(base, flagged, config_diff(base, flagged))] == [
        "changes high_risk of a high-risk threshold"
    ]


def test_deleting_a_high_risk_threshold_is_high_risk():
    def delete(d):
        d["thresholds"] = [t for t in d["thresholds"] if t["key"] != "min_confidence"]

    assert ("threshold min_confidence", "deletes a high-risk threshold") in _risks(delete)


def test_adding_a_threshold_is_not():
    assert _risks(lambda d: d["thresholds"].append({"key": "new_one", "value": 3, "high_risk": True})) == []


# --- rules -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "value"),
    [("mode", "off"), ("mode", "shadow"), ("outcome", "general_query"), ("priority", 15), ("category", "business")],
)
def test_changing_a_compliance_rule_is_high_risk(change, value):
    risks = _risks(lambda d: rule(d, "intent_routing", "high_risk_keyword").__setitem__(change, value))
    assert (
        "rule intent_routing.high_risk_keyword",
        f"changes {change} of a high-risk rule (a compliance rule)",
    ) in risks


def test_a_rule_whose_outcome_hands_over_to_a_person_is_high_risk_whatever_its_category():
    # candidate_not_whitelisted is a risk rule; a quality rule asking to clarify, after it, is not high-risk.
    assert (
        _risks(lambda d: point(d, "intent_routing")["rules"].append(new_rule("late", 70, "quality", "intent_clarify")))
        == []
    )

    def handoff_quality_rule(d):
        point(d, "intent_routing")["rules"].append(new_rule("to_person", 70, "quality", "human_handoff"))

    assert _risks(handoff_quality_rule) == [
        (
            "rule intent_routing.to_person",
            "adds a high-risk rule (its outcome human_handoff hands the conversation to a person)",
        )
    ]


def test_rewording_a_high_risk_rule_is_not():
    assert _risks(lambda d: rule(d, "intent_routing", "high_risk_keyword").__setitem__("description", "x")) == []


def test_deleting_a_high_risk_rule_is_high_risk():
    def delete(d):
        p = point(d, "refund_approval")
        p["rules"] = []

    assert _risks(delete) == [("rule refund_approval.over_auto_refund_limit", "deletes a high-risk rule (a risk rule)")]


def test_a_low_risk_rule_added_after_the_high_risk_rules_applies_at_once():
    assert _risks(lambda d: point(d, "intent_routing")["rules"].append(new_rule("late", 90))) == []


def test_a_rule_placed_ahead_of_a_high_risk_rule_is_high_risk():
    assert _risks(lambda d: point(d, "intent_routing")["rules"].append(new_rule("early", 5))) == [
        (
            "rule intent_routing.early",
            "adds a rule that decides before the high-risk rule intent_routing.high_risk_keyword",
        ),
    ]


def test_a_priority_change_that_moves_a_rule_ahead_of_a_high_risk_rule_is_high_risk():
    risks = _risks(lambda d: rule(d, "intent_routing", "refund_trigger").__setitem__("priority", 5))
    assert risks == [
        (
            "rule intent_routing.refund_trigger",
            "changes priority of a rule that decides before the high-risk rule intent_routing.high_risk_keyword",
        )
    ]


def test_a_shadow_rule_ahead_of_a_high_risk_rule_decides_nothing_so_is_not():
    assert _risks(lambda d: point(d, "intent_routing")["rules"].append(new_rule("watch", 5, mode="shadow"))) == []


# --- rules that decide before a high-risk rule: whether it is reached ---------------------------------


GUARDED = "intent_routing.candidate_not_whitelisted"  # refund_trigger (20) and low_confidence (50) decide first


def test_rewording_a_rule_ahead_of_a_high_risk_rule_is_not():
    assert _risks(lambda d: rule(d, "intent_routing", "low_confidence").__setitem__("description", "Unsure.")) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("conditions", [{"candidate_confidence_below": "min_confidence"}, {"candidate_in": ["general_query"]}]),
        ("outcome", "general_query"),
        ("match", "any"),
        ("effective_until", "2020-01-01T00:00:00Z"),
        ("category", "business"),
    ],
)
def test_any_change_to_a_rule_ahead_of_a_high_risk_rule_is_high_risk(field, value):
    assert _risks(lambda d: rule(d, "intent_routing", "low_confidence").__setitem__(field, value)) == [
        (
            "rule intent_routing.low_confidence",
            f"changes {field} of a rule that decides before the high-risk rule {GUARDED}",
        )
    ]


def test_turning_off_or_deleting_a_rule_ahead_of_a_high_risk_rule_is_high_risk_judged_as_it_was():
    assert _risks(lambda d: rule(d, "intent_routing", "low_confidence").__setitem__("mode", "off")) == [
        (
            "rule intent_routing.low_confidence",
            f"changes mode of a rule that decides before the high-risk rule {GUARDED}",
        )
    ]

    def delete(d):
        point(d, "intent_routing")["rules"] = [
            r for r in point(d, "intent_routing")["rules"] if r["key"] != "refund_trigger"
        ]

    assert _risks(delete) == [
        ("rule intent_routing.refund_trigger", f"deletes a rule that decided before the high-risk rule {GUARDED}")
    ]


def test_moving_a_rule_behind_every_high_risk_rule_is_judged_on_where_it_was():
    assert _risks(lambda d: rule(d, "intent_routing", "low_confidence").__setitem__("priority", 90)) == [
        (
            "rule intent_routing.low_confidence",
            f"changes priority of a rule that decides before the high-risk rule {GUARDED}",
        )
    ]


def test_switching_a_shadow_rule_on_ahead_of_a_high_risk_rule_is_high_risk_and_editing_it_in_shadow_is_not():
    base = copy.deepcopy(DEMO)
    point(base, "intent_routing")["rules"].append(new_rule("watch", 30, mode="shadow"))
    on = copy.deepcopy(base)
    rule(on, "intent_routing", "watch")["mode"] = "enforce"
    assert [(r.record, r.why) for r in change_risks(base, on, config_diff(base, on))] == [
        ("rule intent_routing.watch", f"changes mode of a rule that decides before the high-risk rule {GUARDED}")
    ]
    edited = copy.deepcopy(base)
    rule(edited, "intent_routing", "watch")["outcome"] = "close_order"
    assert change_risks(base, edited, config_diff(base, edited)) == []


def test_the_issues_keyword_attack_is_high_risk():
    # Adding 我 to refund_triggers made refund_trigger (20) catch nearly every message before the risk rule.
    assert _risks(lambda d: keyword_list(d, "refund_triggers")["terms"].append("我")) == [
        (
            "keyword list refund_triggers",
            "changes the terms of a list the rule intent_routing.refund_trigger uses, which decides before the "
            f"high-risk rule {GUARDED}",
        )
    ]


def _with_unflagged_doubt(d):
    d["thresholds"].append({"key": "doubt", "value": 0.5, "min": 0, "max": 1, "high_risk": False})
    rule(d, "intent_routing", "low_confidence")["conditions"] = [{"candidate_confidence_below": "doubt"}]


def test_an_unflagged_threshold_a_rule_ahead_of_a_high_risk_rule_reads_is_high_risk():
    base = copy.deepcopy(DEMO)
    _with_unflagged_doubt(base)
    after = copy.deepcopy(base)
    threshold(after, "doubt")["value"] = 1
    assert [(r.record, r.why) for r in change_risks(base, after, config_diff(base, after))] == [
        (
            "threshold doubt",
            "changes value of a threshold the rule intent_routing.low_confidence uses, which decides before the "
            f"high-risk rule {GUARDED}",
        )
    ]


def test_a_new_threshold_is_not_but_the_rule_that_starts_reading_it_is():
    assert _risks(_with_unflagged_doubt) == [
        (
            "rule intent_routing.low_confidence",
            f"changes conditions of a rule that decides before the high-risk rule {GUARDED}",
        )
    ]


def test_an_unflagged_threshold_a_high_risk_rule_reads_is_high_risk():
    base = copy.deepcopy(DEMO)
    base["thresholds"].append({"key": "hard_cap", "value": 10000, "high_risk": False})
    point(base, "refund_approval")["rules"].append(
        new_rule(
            "cap",
            5,
            "risk",
            "human_handoff",
            conditions=[{"fact": "refund_amount", "op": ">", "threshold": "hard_cap"}],
        )
    )
    after = copy.deepcopy(base)
    threshold(after, "hard_cap")["value"] = 10**9
    assert [(r.record, r.why) for r in change_risks(base, after, config_diff(base, after))] == [
        ("threshold hard_cap", "changes value of a threshold the high-risk rule refund_approval.cap uses")
    ]


def test_retyping_a_declared_fact_is_high_risk_and_declaring_a_new_one_is_not():
    assert _risks(lambda d: point(d, "refund_approval")["facts"].__setitem__("vip", "boolean")) == []
    assert ("point refund_approval", "changes the type of the fact refund_amount") in _risks(
        lambda d: point(d, "refund_approval")["facts"].__setitem__("refund_amount", "string")
    )


# --- keyword lists -----------------------------------------------------------------------------------


def test_changing_the_terms_of_a_list_a_high_risk_rule_uses_is_high_risk():
    risks = _risks(lambda d: keyword_list(d, "high_risk")["terms"].remove("报警"))
    assert risks == [
        (
            "keyword list high_risk",
            "changes the terms of a list the high-risk rule intent_routing.high_risk_keyword uses",
        )
    ]


@pytest.mark.parametrize("option", ["fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS])
def test_turning_off_an_evasion_option_of_a_list_a_high_risk_rule_uses_is_high_risk(option):
    risks = _risks(lambda d: keyword_list(d, "high_risk").__setitem__(option, False))
    assert [record for record, _ in risks] == ["keyword list high_risk"]
    assert "high-risk rule intent_routing.high_risk_keyword" in risks[0][1]


def test_changing_the_terms_of_a_list_only_rules_after_the_high_risk_ones_use_is_not():
    base = copy.deepcopy(DEMO)
    base["keyword_lists"].append({"key": "thanks", "match": "substring", "terms": ["谢谢"]})
    point(base, "intent_routing")["rules"].append(new_rule("polite", 90, conditions=[{"input_contains": "thanks"}]))
    after = copy.deepcopy(base)
    keyword_list(after, "thanks")["terms"].append("多谢")
    assert change_risks(base, after, config_diff(base, after)) == []


def test_an_unless_on_a_high_risk_rule_is_a_high_risk_change_of_that_rule():
    def drop_unless(d):
        rule(d, "intent_routing", "high_risk_keyword")["conditions"][0].pop("unless")

    risks = _risks(drop_unless)
    assert [record for record, _ in risks] == ["rule intent_routing.high_risk_keyword"]


# --- points and machines -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("candidate_whitelist", ["close_order"]),
        ("default_outcome", "general_query"),
        ("state_map", {"close_order": "closed"}),
        ("fallback_state", "received"),
        ("when_no_candidate", "default"),
    ],
)
def test_changing_a_points_answers_or_session_mapping_is_high_risk(field, value):
    assert _risks(lambda d: point(d, "intent_routing").__setitem__(field, value))[0] == (
        "point intent_routing",
        f"changes the point's {field}",
    )


def test_masking_less_personal_data_is_high_risk_and_masking_more_is_not():
    assert _risks(lambda d: point(d, "intent_routing").__setitem__("mask_skip", ["phone"])) == [
        ("point intent_routing", "masks less personal data in the decision log")
    ]
    assert _risks(lambda d: point(d, "intent_routing").__setitem__("mask_patterns", {"order": "E[0-9]{10}"})) == []


@pytest.mark.parametrize(
    "edit", [lambda p: p.__setitem__("mask_patterns", {}), lambda p: p["mask_patterns"].__setitem__("order", "E[0-9]")]
)
def test_removing_or_loosening_an_own_mask_pattern_is_high_risk(edit):
    before = copy.deepcopy(DEMO)
    point(before, "intent_routing")["mask_patterns"] = {"order": "E[0-9]{10}"}
    after = copy.deepcopy(before)
    edit(point(after, "intent_routing"))
    assert [(r.record, r.why) for r in change_risks(before, after, config_diff(before, after))] == [
        ("point intent_routing", "masks less personal data in the decision log")
    ]


def _with_fact_path(doc):
    point(doc, "refund_approval")["mask_fact_paths"] = ["refund_amount"]


def test_not_masking_a_point_s_facts_any_more_is_high_risk():
    assert _risks(lambda d: point(d, "refund_approval").__setitem__("mask_facts", False)) == [
        ("point refund_approval", "masks less personal data in the decision log")
    ]


def test_storing_the_raw_model_output_or_not_applies_at_once():
    # It changes no decision, and the raw output it keeps is masked as the input always is.
    assert _risks(lambda d: point(d, "refund_approval").__setitem__("store_raw_output", True)) == []
    assert _risks(lambda d: point(d, "intent_routing").pop("store_raw_output")) == []


def test_dropping_a_fact_path_is_high_risk_and_adding_one_is_not():
    assert _risks(_with_fact_path) == []
    before = copy.deepcopy(DEMO)
    _with_fact_path(before)
    after = copy.deepcopy(before)
    point(after, "refund_approval")["mask_fact_paths"] = []
    assert [(r.record, r.why) for r in change_risks(before, after, config_diff(before, after))] == [
        ("point refund_approval", "masks less personal data in the decision log")
    ]


def test_describing_a_point_or_declaring_a_fact_is_not():
    assert _risks(lambda d: point(d, "intent_routing").__setitem__("description", "Routes messages")) == []
    assert _risks(lambda d: point(d, "intent_routing").__setitem__("facts", {"vip": "boolean"})) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("transitions", {"init": ["received"], "received": ["closed", "human_handoff"], "human_handoff": ["closed"]}),
        ("timeouts", {"init": 60}),
        ("handoff", "escalated"),
        ("max_anomalies", 9),
        ("actions", {"received": ["refund"]}),
    ],
)
def test_changing_a_machines_moves_timeouts_handoff_or_failure_policy_is_high_risk(field, value):
    risks = _risks(lambda d: machine(d, "after_sales").__setitem__(field, value))
    assert ("machine after_sales", f"changes the machine's {field}") in risks


def test_deleting_a_point_or_a_machine_is_high_risk():
    def delete_point(d):
        d["points"] = [p for p in d["points"] if p["key"] != "refund_approval"]

    assert ("point refund_approval", "deletes a decision point") in _risks(delete_point)


def test_the_admin_note_says_what_needs_approval_for_each_kind_of_record():
    assert "High-risk threshold" in record_approval_note("threshold", "auto_refund_limit", DEMO)
    assert "decides before the high-risk rule intent_routing.candidate_not_whitelisted" in record_approval_note(
        "keyword_list", "refund_triggers", DEMO
    )
    assert "high-risk rule intent_routing.high_risk_keyword" in record_approval_note("keyword_list", "high_risk", DEMO)
    assert "a compliance rule" in record_approval_note("rule", "high_risk_keyword", DEMO, "intent_routing")
    assert "Decides before the high-risk rule intent_routing.candidate_not_whitelisted" in record_approval_note(
        "rule", "refund_trigger", DEMO, "intent_routing"
    )
    assert "decides before the high-risk rule intent_routing.candidate_not_whitelisted" in record_approval_note(
        "threshold", "doubt", _with(_with_unflagged_doubt), ""
    )
    assert (
        record_approval_note("threshold", "wait", _with(lambda d: d["thresholds"].append({"key": "wait", "value": 1})))
        is None
    )


def _with(edit):
    doc = copy.deepcopy(DEMO)
    edit(doc)
    return doc

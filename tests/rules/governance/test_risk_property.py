"""What is high-risk, checked by its effect: if ``change_risks`` lets a change apply at once, no decision a
high-risk rule made — or would make — comes out differently. Random one-record edits of the after-sales
demo (with a late low-risk rule and an unflagged threshold of its own, so low-risk edits exist), decided
by the real engine on a fixed sample of requests before and after. No database."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules.config.document.diff import config_diff
from rules.config.document.validate import config_from_yaml
from rules.engine import Candidate, CompileError, compile_config, evaluate
from rules.governance.impact import live_high_risk_rules
from rules.governance.risk import change_risks

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
BASE = config_from_yaml((Path(__file__).resolve().parents[3] / "demo" / "after_sales.yaml").read_text("utf-8"))
BASE["thresholds"].append({"key": "big_refund", "value": 300, "min": 0, "max": 100000, "high_risk": False})
BASE["keyword_lists"].append(
    {"key": "thanks", "match": "substring", "fold_traditional": False, "ignore_cjk_gaps": False, "terms": ["谢谢"]}
)
_late = {"match": "all", "mode": "enforce", "category": "business"}
next(p for p in BASE["points"] if p["key"] == "intent_routing")["rules"].append(
    {**_late, "key": "polite", "priority": 90, "outcome": "general_query", "conditions": [{"input_contains": "thanks"}]}
)
next(p for p in BASE["points"] if p["key"] == "refund_approval")["rules"].append(
    {
        **_late,
        "key": "big",
        "priority": 50,
        "outcome": "auto_approve",
        "conditions": [{"fact": "refund_amount", "op": ">", "threshold": "big_refund"}],
    }
)

TEXTS = ["我想问一下", "我要投诉", "我要退款", "谢谢", "你好", ""]
CANDIDATES = [
    None,
    Candidate("human_handoff", 0.95),
    Candidate("product_info", 0.9),
    Candidate("general_query", 0.5),
    Candidate("close_order", 0.99),
]
SAMPLE = [("intent_routing", text, cand, {}) for text in TEXTS for cand in CANDIDATES] + [
    ("refund_approval", "", None, {"refund_amount": amount}) for amount in (0, 100, 400, 501, 20000)
]
CONDITIONS = [
    {"input_contains": "refund_triggers"},
    {"input_contains": "thanks"},
    {"input_contains": "high_risk"},
    {"candidate_in": ["human_handoff", "product_info"]},
    {"candidate_confidence_below": "min_confidence"},
    {"candidate_not_in_whitelist": True},
]


def _point(doc, key):
    return next(p for p in doc["points"] if p["key"] == key)


def _rules(doc):
    return [(p["key"], r) for p in doc["points"] for r in p["rules"]]


@st.composite
def edits(draw):
    doc = copy.deepcopy(BASE)
    kind = draw(st.sampled_from(["threshold", "terms", "rule", "new_rule", "point", "describe"]))
    if kind == "threshold":
        t = draw(st.sampled_from(doc["thresholds"]))
        t["value"] = draw(st.sampled_from([0, 0.3, 0.99, 1, 200, 450, 600, 10**6]))
    elif kind == "terms":
        kl = draw(st.sampled_from(doc["keyword_lists"]))
        kl["terms"] = sorted(set(kl["terms"]) | {draw(st.sampled_from(["我", "问", "谢", "退", "你好"]))})
    elif kind == "rule":
        point_key, rule = draw(st.sampled_from(_rules(doc)))
        field = draw(st.sampled_from(["priority", "mode", "outcome", "conditions", "category"]))
        outcomes = _point(doc, point_key)["outcomes"]
        rule[field] = draw(
            {
                "priority": st.integers(1, 100),
                "mode": st.sampled_from(["enforce", "shadow", "off"]),
                "outcome": st.sampled_from(outcomes),
                "conditions": st.lists(st.sampled_from(CONDITIONS), min_size=1, max_size=2).map(
                    lambda cs: cs if point_key == "intent_routing" else rule["conditions"]
                ),
                "category": st.sampled_from(["business", "quality", "risk", "compliance"]),
            }[field]
        )
    elif kind == "new_rule":
        point = _point(doc, draw(st.sampled_from(["intent_routing", "refund_approval"])))
        conditions = (
            draw(st.lists(st.sampled_from(CONDITIONS), min_size=1, max_size=2))
            if point["key"] == "intent_routing"
            else [{"fact": "refund_amount", "op": "<", "value": draw(st.sampled_from([50, 1000]))}]
        )
        point["rules"].append(
            {
                "key": "added",
                "priority": draw(st.integers(1, 100)),
                "category": draw(st.sampled_from(["business", "quality"])),
                "match": draw(st.sampled_from(["all", "any"])),
                "mode": draw(st.sampled_from(["enforce", "shadow"])),
                "outcome": draw(st.sampled_from(point["outcomes"])),
                "conditions": conditions,
            }
        )
    elif kind == "point":
        point = _point(doc, "intent_routing")
        field = draw(st.sampled_from(["when_no_candidate", "candidate_whitelist", "default_outcome"]))
        point[field] = draw(
            {
                "when_no_candidate": st.sampled_from(["ask", "default"]),
                "candidate_whitelist": st.lists(st.sampled_from(point["outcomes"]), unique=True),
                "default_outcome": st.sampled_from(point["outcomes"]),
            }[field]
        )
    else:
        _, rule = draw(st.sampled_from(_rules(doc)))
        rule["description"] = "reworded"
    return doc


def _decisions(doc):
    compiled = compile_config(doc, revision=0)
    return [
        evaluate(compiled.point(point), text=text, candidate=cand, facts=facts, now=NOW)
        for point, text, cand, facts in SAMPLE
    ]


BASE_DECISIONS = _decisions(BASE)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(after=edits())
def test_a_change_judged_low_risk_flips_no_decision_of_a_high_risk_rule(after):
    changes = config_diff(BASE, after)
    assume(changes and not change_risks(BASE, after, changes))
    try:
        decided = _decisions(after)
    except CompileError:
        assume(False)
    high_before, high_after = live_high_risk_rules(BASE), live_high_risk_rules(after)
    for (point, text, cand, _), was, now in zip(SAMPLE, BASE_DECISIONS, decided, strict=True):
        by_high_risk = (was.rule and was.rule.key in high_before[point]) or (
            now.rule and now.rule.key in high_after[point]
        )
        if by_high_risk:
            assert (now.decision, now.rule) == (was.decision, was.rule), (point, text, cand, changes)

from __future__ import annotations

import copy
import datetime as dt

import pytest

# The seed's after-sales configuration, as a snapshot (the shape ``config_document`` produces).
SEED_SNAPSHOT = {
    "version": 1,
    "thresholds": [
        {"key": "auto_refund_limit", "value": 500, "min": 0, "max": 100000, "high_risk": True},
        {"key": "min_confidence", "value": 0.65, "min": 0, "max": 1, "high_risk": True},
    ],
    "keyword_lists": [
        {"key": "high_risk", "match": "substring", "terms": ["投诉", "起诉", "媒体曝光", "12315", "报警"]},
        {"key": "refund_triggers", "match": "substring", "terms": ["退款", "退钱", "退货退款"]},
    ],
    "points": [
        {
            "key": "intent_routing",
            "outcomes": [
                "close_order",
                "refund_request",
                "general_query",
                "human_handoff",
                "product_info",
                "refund_review",
                "intent_clarify",
            ],
            "candidate_whitelist": ["close_order", "general_query", "product_info"],
            "default_outcome": "intent_clarify",
            "when_no_candidate": "ask",
            "rules": [
                {
                    "key": "high_risk_keyword",
                    "priority": 10,
                    "category": "compliance",
                    "match": "all",
                    "mode": "enforce",
                    "outcome": "human_handoff",
                    "conditions": [{"input_contains": "high_risk"}],
                },
                {
                    "key": "refund_trigger",
                    "priority": 20,
                    "category": "business",
                    "match": "all",
                    "mode": "enforce",
                    "outcome": "refund_review",
                    "conditions": [{"input_contains": "refund_triggers"}],
                },
                {
                    "key": "low_confidence",
                    "priority": 50,
                    "category": "quality",
                    "match": "all",
                    "mode": "enforce",
                    "outcome": "intent_clarify",
                    "conditions": [{"candidate_confidence_below": "min_confidence"}],
                },
                {
                    "key": "candidate_not_whitelisted",
                    "priority": 60,
                    "category": "risk",
                    "match": "all",
                    "mode": "enforce",
                    "outcome": "human_handoff",
                    "conditions": [{"candidate_not_in_whitelist": True}],
                },
            ],
        },
        {
            "key": "refund_approval",
            "facts": {"refund_amount": "number"},
            "outcomes": ["auto_approve", "human_handoff"],
            "candidate_whitelist": [],
            "default_outcome": "auto_approve",
            "when_no_candidate": "default",
            "rules": [
                {
                    "key": "over_auto_refund_limit",
                    "priority": 10,
                    "category": "risk",
                    "match": "all",
                    "mode": "enforce",
                    "outcome": "human_handoff",
                    "conditions": [{"fact": "refund_amount", "op": ">", "threshold": "auto_refund_limit"}],
                }
            ],
        },
    ],
    "machines": [],
}

NOON_UTC = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def seed_snapshot():
    return copy.deepcopy(SEED_SNAPSHOT)

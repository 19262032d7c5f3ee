"""What the engine tests share: the seed configuration as a snapshot, and a fixed instant."""

from __future__ import annotations

import datetime as dt

from rules.config.document.validate import config_from_yaml
from tests.support import DEMO

# The seed's after-sales configuration, as a snapshot (the shape ``config_document`` produces), read from
# the demo file that reproduces it: the engine tests and the demo cannot drift apart.
SEED_SNAPSHOT = config_from_yaml(DEMO.read_text(encoding="utf-8"))

NOON_UTC = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


# Seed 001's scenarios, each decided by both engine backends (tests/rules/engine/test_seed_scenarios.py for
# the generated code, test_durable.py for durable-rules): (text, candidate, decision, ruled_by, rule, overridden).
ROUTING_FIELDS = ("text", "candidate", "decision", "ruled_by", "rule", "overridden")
ROUTING_CASES = [
    # A calm complaint the model would soothe is still a complaint.
    ("我要投诉你们的客服", ("general_query", 0.82), "human_handoff", "hard_rule", "high_risk_keyword", True),
    ("再不处理我就打１２３１５", ("product_info", 0.9), "human_handoff", "hard_rule", "high_risk_keyword", True),
    ("我想退款", ("general_query", 0.95), "refund_review", "hard_rule", "refund_trigger", True),
    # Both lists hit: the compliance rule wins on priority.
    ("退款不给我就起诉", ("general_query", 0.95), "human_handoff", "hard_rule", "high_risk_keyword", True),
    ("这个商品有几种颜色", ("product_info", 0.64), "intent_clarify", "hard_rule", "low_confidence", True),
    ("这个商品有几种颜色", ("product_info", 0.65), "product_info", "llm_candidate", None, False),
    ("帮我取消订单", ("refund_request", 0.9), "human_handoff", "hard_rule", "candidate_not_whitelisted", True),
    ("帮我取消订单", ("close_order", 0.9), "close_order", "llm_candidate", None, False),
    # The model answered with something that is no outcome at all.
    ("随便聊聊", ("tell_a_joke", 0.99), "human_handoff", "hard_rule", "candidate_not_whitelisted", True),
]

# Refund approval decides on the amount alone: (amount, decision, ruled_by).
REFUND_FIELDS = ("amount", "decision", "ruled_by")
REFUND_CASES = [
    (120, "auto_approve", "default"),
    (500, "auto_approve", "default"),
    (500.01, "human_handoff", "hard_rule"),
]


# The keyword evasion tests' scanner (tests/rules/engine/test_evasion_*.py): one list holding the demo's
# high-risk words, every evasion option on unless a test says otherwise.
EVASION_TERMS = ("投诉", "起诉", "媒体曝光", "12315", "报警", "police")


def _all_on() -> dict[str, bool]:
    from rules.engine.evasion import EVASION_OPTIONS

    return dict.fromkeys(("fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS), True)


ALL_ON = _all_on()


def scanner(*, match: str = "segmented", terms=EVASION_TERMS, unless=(), **options):
    from rules.engine.keywords import KeywordListSpec, KeywordScanner

    chosen = {**ALL_ON, **options}
    return KeywordScanner(
        [KeywordListSpec(key="k", match=match, terms=terms, ignore_format=True, unless=unless, **chosen)]
    )


def hits(s, text: str) -> tuple[str, ...]:
    from rules.engine.normalize import normalize_text

    return tuple(s.named_hits(s.scan(normalize_text(text))[1]).get("k", ()))

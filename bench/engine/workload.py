"""Deterministic workloads for the engine benchmark: the seed snapshot and a generated 200-rule point.

Everything here is plain data built from a seeded ``random.Random``: the same seed gives byte-for-byte the
same snapshot and the same requests on every machine, so results from different runs are comparable.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from dataclasses import dataclass, field
from typing import Any

from rules.engine import Candidate

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

# A copy of the seed's after-sales configuration (tests/rules/engine/conftest.py), kept here so that the
# benchmark does not import from the test suite.
SEED_SNAPSHOT: dict[str, Any] = {
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


@dataclass(frozen=True, slots=True)
class Request:
    """One decision request: what ``evaluate`` and the other backends are given."""

    text: str = ""
    candidate: Candidate | None = None
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    snapshot: dict[str, Any]
    point: str
    requests: tuple[Request, ...]
    description: str


# --- the seed point ------------------------------------------------------------------------------------

_SEED_PLAIN = [
    "你好，我想问一下这个商品什么时候发货？",
    "订单号{n}，麻烦帮我查一下物流",
    "这个颜色还有货吗",
    "能开发票吗？公司抬头",
    "我不想要了，帮我把订单关了吧",
    "请问尺码偏大还是偏小",
    "快递一直没更新，怎么回事",
    "收到的东西和图片不一样",
    "可以改一下收货地址吗？改成{n}号楼",
    "优惠券为什么用不了",
    "Hi, is this available in size M?",
    "在吗在吗",
]
_SEED_REFUND = [
    "我要退款，东西坏了",
    "怎么还没退钱？已经等了{n}天",
    "申请退货退款，订单{n}",
    "不满意，能退款吗",
]
_SEED_RISK = [
    "再不处理我就投诉到{h}",
    "你们这样我要起诉",
    "我已经打了１２３１５",
    "这事我要找媒体曝光",
    "我要报警了，骗子",
    "已经打12315了，退款也不给",
]
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _seed_requests(rng: random.Random, count: int) -> tuple[Request, ...]:
    intents = ["close_order", "general_query", "product_info", "refund_request", "human_handoff", "refund_review"]
    requests = []
    for _ in range(count):
        roll = rng.random()
        pool = _SEED_RISK if roll < 0.12 else _SEED_REFUND if roll < 0.30 else _SEED_PLAIN
        number = str(rng.randrange(10_000, 99_999_999))
        if rng.random() < 0.4:
            number = number.translate(_FULLWIDTH)
        text = rng.choice(pool).format(n=number, h=rng.choice(["12315", "１２３１５", "消协"]))
        if rng.random() < 0.1:
            candidate = None  # the agent asks before calling its model: needs_candidate
        else:
            decision = rng.choice(intents) if rng.random() < 0.95 else "cancel_subscription"  # outside outcomes
            candidate = Candidate(decision=decision, confidence=round(rng.uniform(0.3, 0.99), 2))
        requests.append(Request(text=text, candidate=candidate))
    return tuple(requests)


def _refund_requests(rng: random.Random, count: int) -> tuple[Request, ...]:
    return tuple(
        Request(facts={"refund_amount": round(rng.choice([rng.uniform(1, 500), rng.uniform(1, 5000)]), 2)})
        for _ in range(count)
    )


def seed_workloads(count: int, seed: int = 20261130) -> list[Workload]:
    rng = random.Random(seed)  # noqa: S311 - benchmark data, not security
    return [
        Workload(
            name="seed intent_routing",
            snapshot=SEED_SNAPSHOT,
            point="intent_routing",
            requests=_seed_requests(rng, count),
            description="the seed point: 4 rules, 2 keyword lists (8 terms), short Chinese messages",
        ),
        Workload(
            name="seed refund_approval",
            snapshot=SEED_SNAPSHOT,
            point="refund_approval",
            requests=_refund_requests(rng, count),
            description="the seed point: 1 fact rule, no text",
        ),
    ]


# --- the generated 200-rule point ----------------------------------------------------------------------

N_RULES = 200
N_LISTS = 20
N_TERMS = 5_000
N_CHARS = 3_000
MAX_INPUT = 500

OUTCOMES = [
    "human_handoff",
    "refund_review",
    "fraud_review",
    "escalate_legal",
    "vip_care",
    "intent_clarify",
    "general_query",
    "close_order",
    "product_info",
]
WHITELIST = ["general_query", "close_order", "product_info"]
CANDIDATE_POOL = [*OUTCOMES, "refund_request", "cancel_subscription"]  # the last two are outside the outcomes
TIERS = ["bronze", "silver", "gold", "platinum"]
CHANNELS = ["app", "web", "wechat", "phone", "email"]
REGIONS = [f"r{i:02d}" for i in range(12)]
TAGS = [f"tag{i}" for i in range(16)]
FACTS = {
    "order_amount": "number",
    "account_age_days": "integer",
    "refund_count_90d": "integer",
    "customer_tier": "string",
    "channel": "string",
    "region": "string",
    "tags": "string_list",
    "is_vip": "boolean",
}
THRESHOLDS = {
    "big_order": 3000.0,
    "huge_order": 4500.0,
    "new_account_days": 30.0,
    "many_refunds": 6.0,
    "min_confidence": 0.55,
    "very_low_confidence": 0.4,
}


@dataclass(frozen=True, slots=True)
class GeneratedPoint:
    snapshot: dict[str, Any]
    terms_by_list: dict[str, list[str]]
    char_pool: str


def _cjk_pool(rng: random.Random) -> str:
    return "".join(chr(c) for c in rng.sample(range(0x4E00, 0x9FA6), N_CHARS))


def _terms(rng: random.Random, chars: str) -> list[str]:
    seen: set[str] = set()
    terms: list[str] = []
    while len(terms) < N_TERMS:
        if rng.random() < 0.08:
            term = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 9)))
        else:
            term = "".join(rng.choices(chars, k=rng.choice([2, 2, 3, 3, 3, 4])))
        if term not in seen:
            seen.add(term)
            terms.append(term)
    return terms


def _fact_condition(rng: random.Random) -> dict[str, Any]:
    """A selective fact test (true for roughly 1-30% of requests): hard rules fire on a minority of requests."""
    fact = rng.choice(list(FACTS))
    if fact == "order_amount":
        if rng.random() < 0.4:
            return {"fact": fact, "op": rng.choice([">", ">="]), "threshold": rng.choice(["big_order", "huge_order"])}
        return {"fact": fact, "op": rng.choice([">", ">="]), "value": rng.choice([3500, 4000, 4800])}
    if fact == "account_age_days":
        if rng.random() < 0.5:
            return {"fact": fact, "op": "<", "threshold": "new_account_days"}
        return {"fact": fact, "op": rng.choice(["<", "<=", ">"]), "value": rng.choice([90, 180, 3000, 3500])}
    if fact == "refund_count_90d":
        if rng.random() < 0.5:
            return {"fact": fact, "op": ">=", "threshold": "many_refunds"}
        return {"fact": fact, "op": rng.choice(["==", ">"]), "value": rng.choice([4, 5])}
    if fact == "customer_tier":
        if rng.random() < 0.7:
            return {"fact": fact, "op": "==", "value": rng.choice(TIERS)}
        return {"fact": fact, "op": "in", "value": rng.sample(TIERS, 2)}
    if fact == "channel":
        return {"fact": fact, "op": "==", "value": rng.choice(CHANNELS)}
    if fact == "region":
        return {"fact": fact, "op": "in", "value": rng.sample(REGIONS, rng.randint(1, 3))}
    if fact == "tags":
        return {"fact": fact, "op": "in", "value": rng.sample(TAGS, rng.randint(1, 2))}
    return {"fact": fact, "op": "==", "value": True}


def _candidate_condition(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.35:
        return {"candidate_in": rng.sample(CANDIDATE_POOL, rng.randint(1, 3))}
    if roll < 0.55:
        return {"candidate_not_in": rng.sample(OUTCOMES, rng.randint(4, 7))}
    if roll < 0.75:
        return {"candidate_not_in_whitelist": True}
    return {"candidate_confidence_below": rng.choice(["min_confidence", "very_low_confidence"])}


def _rule(rng: random.Random, index: int, lists: list[str]) -> dict[str, Any]:
    any_of = rng.random() < 0.15
    conditions: list[dict[str, Any]] = []
    if any_of:
        # Alternatives: keyword lists, now and then one selective fact test.
        for _ in range(rng.choice([2, 2, 3])):
            if rng.random() < 0.8:
                conditions.append({"input_contains": rng.choice(lists)})
            else:
                conditions.append({"fact": "refund_count_90d", "op": ">=", "threshold": "many_refunds"})
    else:
        # Most rules test a keyword list and narrow it down with facts or the candidate; the rest combine
        # three fact/candidate tests.
        with_keyword = rng.random() < 0.9
        if with_keyword:
            conditions.append({"input_contains": rng.choice(lists)})
        n = rng.choice([1, 2, 2, 3]) if with_keyword else 3
        while len(conditions) < n:
            roll = rng.random()
            if roll < 0.2:
                conditions.append({"input_contains": rng.choice(lists)})
            elif roll < 0.8:
                conditions.append(_fact_condition(rng))
            else:
                conditions.append(_candidate_condition(rng))
    if index < len(lists):  # every list is used by some rule, so the scanner holds all 5,000 terms
        conditions[0] = {"input_contains": lists[index]}
    roll = rng.random()
    mode = "shadow" if roll < 0.05 else "off" if roll < 0.07 else "enforce"
    return {
        "key": f"rule_{index:03d}",
        "description": f"generated rule {index}",
        "priority": rng.randint(1, 1000),
        "category": rng.choice(["compliance", "risk", "business", "quality"]),
        "match": "any" if any_of else "all",
        "mode": mode,
        "outcome": rng.choice(OUTCOMES[:6]),
        "conditions": conditions,
    }


def generated_point(seed: int = 200) -> GeneratedPoint:
    rng = random.Random(seed)  # noqa: S311 - benchmark data, not security
    chars = _cjk_pool(rng)
    terms = _terms(rng, chars)
    per_list = N_TERMS // N_LISTS
    lists = [f"list_{i:02d}" for i in range(N_LISTS)]
    terms_by_list = {key: terms[i * per_list : (i + 1) * per_list] for i, key in enumerate(lists)}
    snapshot = {
        "version": 1,
        "thresholds": [{"key": k, "value": v} for k, v in THRESHOLDS.items()],
        "keyword_lists": [
            {"key": key, "match": "word" if i >= N_LISTS - 2 else "substring", "terms": terms_by_list[key]}
            for i, key in enumerate(lists)
        ],
        "points": [
            {
                "key": "generated_200",
                "facts": FACTS,
                "outcomes": OUTCOMES,
                "candidate_whitelist": WHITELIST,
                "default_outcome": "intent_clarify",
                "when_no_candidate": "ask",
                "rules": [_rule(rng, i, lists) for i in range(N_RULES)],
            }
        ],
        "machines": [],
    }
    return GeneratedPoint(snapshot=snapshot, terms_by_list=terms_by_list, char_pool=chars)


def _facts(rng: random.Random) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "order_amount": round(rng.uniform(1, 5000), 2),
        "account_age_days": rng.randint(0, 3650),
        "refund_count_90d": rng.choices(range(11), weights=[45, 20, 12, 8, 6, 4, 1.2, 1, 0.8, 0.6, 0.4])[0],
        "customer_tier": rng.choice(TIERS),
        "channel": rng.choice(CHANNELS),
        "region": rng.choice(REGIONS),
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
        "is_vip": rng.random() < 0.1,
    }
    for key in list(facts):
        if rng.random() < 0.08:  # agents do not always know every fact
            del facts[key]
    return facts


def _text(rng: random.Random, point: GeneratedPoint) -> str:
    roll = rng.random()
    length = rng.randint(8, 60) if roll < 0.3 else rng.randint(60, 200) if roll < 0.7 else rng.randint(200, MAX_INPUT)
    n_terms = rng.choices([0, 1, 2, 3], weights=[50, 30, 14, 6])[0]
    lists = list(point.terms_by_list)
    pieces: list[str] = []
    size = 0
    inserts = sorted(rng.randrange(length) for _ in range(n_terms))
    while size < length:
        if inserts and size >= inserts[0]:
            inserts.pop(0)
            piece = rng.choice(point.terms_by_list[rng.choice(lists)])
            if piece.isascii():
                piece = f" {piece} "
        else:
            roll = rng.random()
            if roll < 0.05:
                piece = str(rng.randrange(100, 10**8)).translate(_FULLWIDTH)  # an order number, full width
            elif roll < 0.10:
                piece = " " + "".join(rng.choices(string.ascii_letters, k=rng.randint(2, 8))) + " "
            elif roll < 0.25:
                piece = rng.choice("，。！？、：")
            else:
                piece = "".join(rng.choices(point.char_pool, k=rng.randint(1, 6)))
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)[:MAX_INPUT]


def generated_workload(count: int, seed: int = 200) -> Workload:
    point = generated_point(seed)
    rng = random.Random(seed + 1)  # noqa: S311 - benchmark data, not security
    requests = []
    for _ in range(count):
        candidate = None
        if rng.random() < 0.9:
            candidate = Candidate(decision=rng.choice(CANDIDATE_POOL), confidence=round(rng.uniform(0.3, 0.99), 2))
        requests.append(Request(text=_text(rng, point), candidate=candidate, facts=_facts(rng)))
    return Workload(
        name="generated 200 rules",
        snapshot=point.snapshot,
        point="generated_200",
        requests=tuple(requests),
        description=(
            f"{N_RULES} rules (any/all, shadow/off mixed in), {N_LISTS} keyword lists, {N_TERMS:,} distinct terms, "
            f"inputs up to {MAX_INPUT} chars"
        ),
    )

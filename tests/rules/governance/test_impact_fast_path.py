"""The impact preview's fast read path (raw rows, JSON decoded once, no timestamp unless the point reads the
clock, one text pre-pass per distinct input) gives exactly what a plain replay over model instances gives."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from rules.config.selectors import config_document
from rules.decisions.compute import decision_for_invalid_output
from rules.decisions.replay import _PLACEHOLDER
from rules.decisions.selectors import decision_log_row_ids, decision_log_rows
from rules.engine import Candidate, compile_config, evaluate
from rules.governance.impact import MAX_EXAMPLES, impact_compute, impact_points_affected, row_json
from rules.models import DecisionRecord

NOW = dt.datetime(2026, 11, 20, 15, 30, tzinfo=dt.UTC)


def _reference(live: dict[str, Any], proposed: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """The preview computed the plain way: model instances through the ORM, each decided with ``evaluate``
    as a replay under another revision decides it."""
    compiled = compile_config(proposed, revision=0, backend=settings.ARBITER_ENGINE)
    since = now - dt.timedelta(days=settings.ARBITER_IMPACT_DAYS)
    evaluated = changed = 0
    matrix: dict[str, dict[str, int]] = {}
    examples: list[dict[str, Any]] = []
    for key in impact_points_affected(live, proposed):
        point = compiled.point(key)
        records = DecisionRecord.objects.filter(point=key, created_at__gte=since).order_by("-created_at")
        for r in records[: settings.ARBITER_IMPACT_DECISIONS]:
            evaluated += 1
            if point is None:
                new, rule, by = "(point removed)", None, None
            else:
                text = _PLACEHOLDER.sub("\ufffc", r.input) if r.masked else r.input
                has_candidate = r.candidate_decision and r.candidate_confidence is not None
                candidate = (
                    Candidate(r.candidate_decision, r.candidate_confidence, r.candidate_reason)
                    if has_candidate
                    else None
                )
                decision = evaluate(
                    point,
                    text=text,
                    candidate=candidate,
                    facts=r.facts,
                    now=r.created_at,
                    session_state=r.session_state or None,
                    known_hits=r.keyword_hits if r.masked else None,
                )
                if r.candidate_invalid:
                    decision = decision_for_invalid_output(point, decision, "recorded as invalid")
                new = decision.decision or "(asks the LLM)"
                rule, by = (decision.rule.key if decision.rule else None), decision.ruled_by
            if new != r.decision:
                changed += 1
                matrix.setdefault(r.decision, {}).setdefault(new, 0)
                matrix[r.decision][new] += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(
                        {
                            "decision_id": str(r.pk),
                            "point": key,
                            "input": r.input,
                            "created_at": r.created_at.isoformat().replace("+00:00", "Z"),
                            "old": r.decision,
                            "new": new,
                            "rule": rule,
                            "ruled_by": by,
                        }
                    )
    return {"evaluated": evaluated, "changed": changed, "matrix": matrix, "examples": examples}


def _proposals(live: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Proposals touching both demo points: thresholds and a keyword list; the same plus a night-time rule
    (the replay then reads each row's timestamp); and one that removes a point."""
    plain = copy.deepcopy(live)
    for t in plain["thresholds"]:
        t["value"] = {"min_confidence": 0.8, "auto_refund_limit": 750}[t["key"]]
    for kl in plain["keyword_lists"]:
        if kl["key"] == "high_risk":
            kl["terms"] = [*kl["terms"], "phone", "退货"]
    clock = copy.deepcopy(plain)
    routing = next(p for p in clock["points"] if p["key"] == "intent_routing")
    routing["rules"].append(
        {
            "key": "night_refunds",
            "priority": 15,
            "category": "business",
            "outcome": "human_handoff",
            "conditions": [
                {"time_window": {"from": "22:00", "to": "06:00", "tz": "Asia/Shanghai"}},
                {"session_state_in": ["refund_review", "received"]},
            ],
        }
    )
    removed = copy.deepcopy(plain)
    removed["points"] = [p for p in removed["points"] if p["key"] != "refund_approval"]
    return {"plain": plain, "clock": clock, "removed": removed}


_TEXTS = [
    "我要退款",
    "投诉",
    "[phone]",
    "phone",
    "退 款",
    "12315",
    "hello",
    "退貨",
    "Refund",
    " ",
    "退货",
    "１２３１５",
]
_FACTS = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {
            "refund_amount": st.one_of(
                st.integers(-10, 2000),
                st.floats(0, 2000, allow_nan=False),
                st.just(10**30),
                st.none(),
            )
        }
    ),
    st.just({"amount": 900}),  # a fact of a point's earlier revision
)
_ROW = st.fixed_dictionaries(
    {
        "point": st.sampled_from(["intent_routing", "refund_approval", "retired_point"]),
        "input": st.lists(st.sampled_from(_TEXTS), max_size=4).map("".join),
        "masked": st.sampled_from([{}, {"phone": 1}]),
        "keyword_hits": st.sampled_from([{}, {"high_risk": ["12315"]}, {"refund_triggers": ["退款"]}, {"gone": ["x"]}]),
        "facts": _FACTS,
        "session_state": st.sampled_from(["", "refund_review", "received"]),
        "candidate_decision": st.sampled_from(["", "general_query", "close_order", "refund_request", "refund_now"]),
        "candidate_confidence": st.one_of(st.none(), st.floats(0, 1)),
        "candidate_reason": st.sampled_from(["", "the customer asked"]),
        "candidate_invalid": st.booleans(),
        "decision": st.sampled_from(["general_query", "human_handoff", "auto_approve", "intent_clarify", ""]),
        "revision": st.integers(1, 3),
        "hours_ago": st.integers(0, 40 * 24),  # some outside the 30-day window
    }
)


def _log(rows: list[dict[str, Any]]) -> None:
    DecisionRecord.objects.all().delete()
    records = []
    for index, row in enumerate(rows):
        fields = {k: v for k, v in row.items() if k != "hours_ago"}
        # Distinct timestamps: rows the same instant apart would be ordered arbitrarily, by either read.
        created = NOW - dt.timedelta(hours=row["hours_ago"], microseconds=index + 1)
        records.append(DecisionRecord(created_at=created, agent_name="bot", ruled_by="default", **fields))
    DecisionRecord.objects.bulk_create(records)


def _fast(live: dict[str, Any], proposed: dict[str, Any]) -> dict[str, Any]:
    impact = impact_compute(live_document=live, proposed_document=proposed, now=NOW)
    return {k: impact[k] for k in ("evaluated", "changed", "matrix", "examples")}


@pytest.fixture
def documents(demo, editor):
    live = config_document()
    return live, _proposals(live)


# A fixed log: every kind of row at least once, more changed rows than there are examples.
_FIXED = [
    {
        "point": "intent_routing",
        "input": "我要退款[phone]",
        "masked": {"phone": 1},
        "keyword_hits": {"high_risk": ["12315"]},
    },
    {"point": "intent_routing", "input": "[phone]", "masked": {"phone": 1}, "keyword_hits": {}},
    {"point": "intent_routing", "input": "hello", "candidate_decision": "general_query", "candidate_confidence": 0.7},
    {"point": "intent_routing", "input": "hello", "candidate_decision": "general_query", "candidate_confidence": 0.9},
    {"point": "intent_routing", "input": "退货", "candidate_decision": "refund_now", "candidate_confidence": 0.95},
    {"point": "intent_routing", "input": "hi", "candidate_decision": "close_order", "candidate_invalid": True},
    {"point": "intent_routing", "input": "hi", "session_state": "refund_review", "facts": {"refund_amount": 900}},
    {"point": "intent_routing", "input": "", "hours_ago": 31 * 24},
    {"point": "refund_approval", "facts": {"refund_amount": 600}, "decision": "human_handoff"},
    {"point": "refund_approval", "facts": {"refund_amount": 10**30}, "decision": "human_handoff"},
    {"point": "refund_approval", "facts": {"amount": 900}, "decision": "human_handoff"},
    {"point": "refund_approval", "facts": {}, "decision": "human_handoff", "revision": 2},
    {"point": "retired_point", "input": "投诉"},
] + [
    {"point": "refund_approval", "facts": {"refund_amount": 501 + i}, "decision": "human_handoff", "hours_ago": i}
    for i in range(MAX_EXAMPLES + 5)
]


def _row(**fields: Any) -> dict[str, Any]:
    base = {
        "input": "",
        "masked": {},
        "keyword_hits": {},
        "facts": {},
        "session_state": "",
        "candidate_decision": "",
        "candidate_confidence": None,
        "candidate_reason": "",
        "candidate_invalid": False,
        "decision": "general_query",
        "revision": 1,
        "hours_ago": 1,
    }
    return base | fields


@pytest.mark.parametrize("proposal", ["plain", "clock", "removed"])
def test_the_fast_path_counts_as_a_plain_replay_does(documents, proposal):
    live, proposals = documents
    _log([_row(**r) for r in _FIXED])
    fast = _fast(live, proposals[proposal])
    assert fast == _reference(live, proposals[proposal], NOW)
    assert fast["evaluated"] == len(_FIXED) - 2  # not the row outside the window, not the retired point
    assert len(fast["examples"]) == MAX_EXAMPLES and fast["changed"] > MAX_EXAMPLES
    assert all(isinstance(e["decision_id"], str) and e["created_at"].endswith("Z") for e in fast["examples"])


@pytest.mark.parametrize("proposal", ["plain", "clock", "removed"])
@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, max_size=30), limit=st.sampled_from([3, 10, 10_000]))
def test_the_fast_path_agrees_with_a_plain_replay_on_any_log(documents, proposal, rows, limit):
    live, proposals = documents
    settings.ARBITER_IMPACT_DECISIONS, kept = limit, settings.ARBITER_IMPACT_DECISIONS
    try:
        _log(rows)
        assert _fast(live, proposals[proposal]) == _reference(live, proposals[proposal], NOW)
    finally:
        settings.ARBITER_IMPACT_DECISIONS = kept


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**200)
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\udfff"])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10,
)


@given(value=_JSON)
def test_row_json_reads_what_the_orm_reads(value):
    text = json.dumps(value)  # what Django's JSONField writes (NaN and lone surrogates included)
    assert json.dumps(row_json(text)) == json.dumps(json.loads(text))
    assert row_json("not json") == "not json" and row_json(None) is None


def test_a_text_read_once_serves_every_row_holding_it(documents):
    # Both rows blank out to one text, so the second reuses the first's pre-pass; the first adds its recorded
    # hits to it, which must not stick to the shared pre-pass and decide the second.
    live, proposals = documents
    masked = {"point": "intent_routing", "input": "退款 [phone]", "masked": {"phone": 1}, "decision": "intent_clarify"}
    _log([_row(**masked, keyword_hits={"high_risk": ["12315"]}), _row(**masked)])
    fast = _fast(live, proposals["plain"])
    assert fast == _reference(live, proposals["plain"], NOW)
    assert [e["rule"] for e in fast["examples"]] == ["high_risk_keyword", "refund_trigger"]


def test_examples_take_their_ids_and_times_from_the_log_and_a_row_deleted_since_has_no_time(demo, editor):
    _log([_row(point="refund_approval"), _row(point="refund_approval", hours_ago=2)])
    kept, gone = DecisionRecord.objects.order_by("-created_at")
    raw = {
        row[0]
        for row in decision_log_rows(
            point="refund_approval", since=NOW - dt.timedelta(days=1), limit=9, columns=("id",)
        )
    }
    gone_id = str(gone.pk)
    gone.delete()
    found = decision_log_row_ids(raw)
    assert sorted(found.values(), key=str) == sorted([(str(kept.pk), kept.created_at), (gone_id, None)], key=str)


def test_a_full_prepass_cache_is_emptied_and_the_counts_stay_exact(documents, monkeypatch):
    monkeypatch.setattr("rules.decisions.replay.PREPASS_CACHE", 2)
    live, proposals = documents
    _log([_row(**r) for r in _FIXED])
    assert _fast(live, proposals["plain"]) == _reference(live, proposals["plain"], NOW)

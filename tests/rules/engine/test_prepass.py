"""A text pre-pass computed once (``keyword_prepass``) decides as the scan inside ``evaluate`` does, and one
pre-pass can serve many requests: ``evaluate`` never changes it."""

from __future__ import annotations

import copy
import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine import Candidate, compile_config, evaluate, keyword_prepass
from tests.support.engine import NOON_UTC, SEED_SNAPSHOT

POINT = compile_config(SEED_SNAPSHOT, revision=1).point("intent_routing")
PIECES = ["我要退款", "投诉", "12315", "退 款", "退貨", "hello", "１２３１５", " ", "\ufffc"]
KNOWN = st.sampled_from([None, {}, {"high_risk": ["12315"]}, {"refund_triggers": ["退款"], "gone": ["x"]}])
CANDIDATE = st.one_of(
    st.none(), st.builds(Candidate, st.sampled_from(["general_query", "refund_now"]), st.floats(0, 1))
)


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(st.sampled_from(PIECES), max_size=4).map("".join),
    known=st.lists(KNOWN, min_size=1, max_size=3),
    candidate=CANDIDATE,
)
def test_a_shared_prepass_decides_as_a_scan_and_stays_unchanged(text, known, candidate):
    assert POINT is not None
    prepass = keyword_prepass(POINT, text)
    before = copy.deepcopy(prepass)
    for hits in known:  # several requests with one text, each with its own recorded hits
        kwargs = {"candidate": candidate, "now": NOON_UTC, "known_hits": hits}
        assert evaluate(POINT, text=text, prepass=prepass, **kwargs) == evaluate(POINT, text=text, **kwargs)
        assert prepass == before


def test_only_a_time_window_or_an_effective_period_reads_the_clock():
    snapshot = copy.deepcopy(SEED_SNAPSHOT)
    assert not any(p.spec.reads_clock() for p in compile_config(snapshot, revision=1).points.values())
    routing, refunds = snapshot["points"]
    routing["rules"][0]["conditions"].append({"time_window": {"from": "09:00", "to": "18:00", "tz": "UTC"}})
    refunds["rules"][0]["effective_from"] = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).isoformat()
    compiled = compile_config(snapshot, revision=2)
    assert [compiled.points[k].spec.reads_clock() for k in ("intent_routing", "refund_approval")] == [True, True]


def test_revisions_with_the_same_lists_share_one_scanner_and_a_changed_list_gets_its_own():
    snapshot = copy.deepcopy(SEED_SNAPSHOT)
    first = compile_config(snapshot, revision=1).points["intent_routing"]
    snapshot["thresholds"][0]["value"] = 900
    assert compile_config(snapshot, revision=2).points["intent_routing"].scanner is first.scanner
    snapshot["keyword_lists"][0]["terms"].append("退货")
    changed = compile_config(snapshot, revision=3).points["intent_routing"]
    assert changed.scanner is not first.scanner
    assert keyword_prepass(changed, "我要退货")[0] and not keyword_prepass(first, "我要退货")[0]

"""What ``session_field`` and ``session_keyword_seen`` mean, on every backend: the reference reading, the
generated code and durable-rules decide each case alike (the differential tests check that at random;
these pin the meaning)."""

from __future__ import annotations

import pytest

from rules.engine import compile_config, evaluate
from rules.engine.request import SessionView
from tests.support.engine import NOON_UTC

FIELDS = [
    {"name": "retries", "type": "integer"},
    {"name": "phone", "type": "string", "pii": True},
    {"name": "ok", "type": "boolean"},
    {"name": "tags", "type": "array"},
]


def _holds(condition, session, backend):
    snapshot = {
        "thresholds": [{"key": "limit", "value": 3}],
        "keyword_lists": [{"key": "complaint", "match": "substring", "terms": ["投诉"]}],
        "machines": [{"key": "m", "fields": FIELDS}],
        "points": [
            {
                "key": "p",
                "outcomes": ["yes", "no"],
                "default_outcome": "no",
                "when_no_candidate": "default",
                "machine": "m",
                "rules": [{"key": "r", "priority": 1, "category": "risk", "outcome": "yes", "conditions": [condition]}],
            }
        ],
    }
    point = compile_config(snapshot, revision=1, backend=backend).point("p")
    return evaluate(point, now=NOON_UTC, session=session).decision == "yes"


def fields(**values):
    return SessionView(values)


def recent(*hits):
    return SessionView({}, tuple(frozenset(h) for h in hits))


CASES = [
    # A field the session does not hold never holds, not even !=; nor without a session at all.
    ({"session_field": "retries", "op": "!=", "value": 1}, fields(), False),
    ({"session_field": "retries", "op": "!=", "value": 1}, None, False),
    ({"session_field": "retries", "op": "!=", "value": 1}, fields(retries=2), True),
    ({"session_field": "retries", "op": ">=", "threshold": "limit"}, fields(retries=3), True),
    ({"session_field": "retries", "op": ">=", "threshold": "limit"}, fields(retries=2), False),
    # A value of another type than compared with (a declaration changed since it was set) never holds.
    ({"session_field": "retries", "op": ">=", "threshold": "limit"}, fields(retries="9"), False),
    ({"session_field": "retries", "op": "==", "value": 1}, fields(retries=True), False),
    ({"session_field": "ok", "op": "==", "value": True}, fields(ok=1), False),
    ({"session_field": "ok", "op": "==", "value": True}, fields(ok=True), True),
    ({"session_field": "retries", "op": "in", "value": [1, 2]}, fields(retries=2), True),
    ({"session_field": "retries", "op": "in", "value": [1, 2]}, fields(retries=True), False),
    ({"session_field": "tags", "op": "in", "value": ["vip", "new"]}, fields(tags=["old", "vip"]), True),
    ({"session_field": "tags", "op": "in", "value": ["vip", "new"]}, fields(tags=["old"]), False),
    ({"session_field": "tags", "op": "in", "value": [1]}, fields(tags=[True]), False),
    ({"session_field": "phone", "pattern": "^1[3-9]\\d{9}$"}, fields(phone="13800138000"), True),
    ({"session_field": "phone", "pattern": "^1[3-9]\\d{9}$"}, fields(phone="12345"), False),
    ({"session_field": "phone", "pattern": "^1"}, fields(phone=13800138000), False),
    # The last N logged decisions, newest first; the list named, in any of them.
    ({"session_keyword_seen": "complaint", "last": 2}, recent((), ("complaint",)), True),
    ({"session_keyword_seen": "complaint", "last": 2}, recent((), (), ("complaint",)), False),
    ({"session_keyword_seen": "complaint", "last": 1}, recent(("other", "complaint")), True),
    ({"session_keyword_seen": "complaint"}, recent(*[()] * 4, ("complaint",)), True),  # last: 5 by default
    ({"session_keyword_seen": "complaint"}, recent(*[()] * 5, ("complaint",)), False),
    ({"session_keyword_seen": "complaint", "last": 3}, None, False),
]


@pytest.mark.parametrize("backend", ["native", "interpreted", "durable"])
@pytest.mark.parametrize(("condition", "session", "holds"), CASES)
def test_what_each_condition_means(condition, session, holds, backend):
    assert _holds(condition, session, backend) is holds

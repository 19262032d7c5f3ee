"""Rules that read the session (issue 24): a decide over HTTP sees the session's fields and the keyword lists
of its latest logged decisions, read with the session in one statement; the log row records what the rules
read (personal data masked), and a replay of it decides again exactly on that."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rules.decisions.replay import decision_replay
from rules.models import DecisionRecord
from tests.support import agent_api, decide, post
from tests.support.session_rules import session_rules_import

POINT = "address_check"


@pytest.fixture
def client(db):
    session_rules_import()
    client = agent_api(points=[POINT, "complaint_watch"])
    answer = post(client, "/api/v1/sessions", {"machine": "address", "session_id": "s1"})
    assert answer.status_code == 201, answer.json()
    return client


def _fields(client, updates, expected_state="collecting_params"):
    answer = client.patch(
        "/api/v1/sessions/s1/fields", {"expected_state": expected_state, "updates": updates}, format="json"
    )
    assert answer.status_code == 200, answer.json()


def _decide(client, text="", point=POINT, **extra):
    answer = decide(client, {"point": point, "input": text, "session_id": "s1", **extra})
    assert answer.status_code == 201, answer.json()
    return answer.json()


def _row(body) -> DecisionRecord:
    return DecisionRecord.objects.get(pk=body["id"])


def test_a_session_field_makes_a_rule_fire_and_the_log_records_it_masked(client):
    assert _decide(client)["rule"]["key"] == "no_phone"  # no field held: no session_field condition holds
    _fields(client, {"receiver_phone": "138-0013-8000"})
    body = _decide(client)
    assert (body["decision"], body["rule"]["key"]) == ("proceed", "phone_ready")
    # The reason names the field, never its (personal) value.
    assert body["reason"] == r"phone_ready: session field receiver_phone (personal data) matches /^1[3-9]\d{9}$/"
    row = _row(body)
    assert row.session_read == {
        "fields": {"receiver_phone": "[masked]"},
        "masked_fields": ["receiver_phone"],
        "recent": [[]],  # the decision before it hit no list
    }
    assert "13800138000" not in str(DecisionRecord.objects.filter(session_id="s1").values())


def test_a_number_field_against_a_threshold(client):
    _fields(client, {"retry_count": 3})
    body = _decide(client)
    assert (body["decision"], body["rule"]["key"]) == ("human_handoff", "too_many_retries")
    assert body["reason"] == "too_many_retries: session field retry_count 3 >= max_retries 3"
    assert _row(body).session_read["fields"] == {"retry_count": 3}


def test_a_complaint_earlier_in_the_session_is_seen_while_still_collecting(client):
    first = _decide(client, "我要投诉")
    assert first["rule"]["key"] == "complaint_now"
    # The next turns say nothing of a complaint: the list's hit two decisions back still counts (last: 3).
    for _ in range(3):
        body = _decide(client, "我的新地址是杭州市")
        assert (body["decision"], body["rule"]["key"]) == ("human_handoff", "complained_before")
        assert body["reason"] == (
            "complained_before: keyword list complaint seen in the last 3 decisions of the session; "
            "session state collecting_params"
        )
    # Three decisions later it has left the window.
    assert _decide(client, "我的新地址是杭州市")["rule"]["key"] == "no_phone"
    rows = DecisionRecord.objects.filter(session_id="s1").order_by("created_at")
    assert [r.session_read["recent"] for r in rows] == [
        [],
        [["complaint"]],
        [[], ["complaint"]],
        [[], [], ["complaint"]],
        [[], [], []],
    ]


def test_a_replay_of_such_a_record_is_exact(client):
    _decide(client, "我要投诉")
    _fields(client, {"retry_count": 1})
    body = _decide(client, "地址是杭州市")
    assert body["rule"]["key"] == "complained_before"
    # The session moves on (fields changed, more decisions): the replay decides on what the row recorded.
    _fields(client, {"retry_count": 0})
    for _ in range(3):
        _decide(client, "好的")
    replay = decision_replay(record=_row(body))
    assert replay.identical and replay.masked_fields == ()
    assert replay.replayed.rule.key == "complained_before"


def test_a_replay_of_a_rule_that_read_a_masked_field_says_it_is_not_exact(client):
    _fields(client, {"receiver_phone": "13800138000"})
    body = _decide(client)
    replay = decision_replay(record=_row(body))
    assert replay.masked_fields == ("receiver_phone",)
    assert not replay.identical  # the value is gone: the replay left it out and says so


def test_apply_decides_under_the_lock_with_the_same_session_data(client):
    _fields(client, {"receiver_phone": "13800138000"})
    body = _decide(client, apply=True)
    assert (body["decision"], body["session"]["state"]) == ("proceed", "executing")
    assert _row(body).session_read["fields"] == {"receiver_phone": "[masked]"}


def _read() -> list[str]:
    if connection.vendor == "postgresql":
        return ["SELECT"]  # the session, its feedback's rows and its latest decisions' lists: one statement
    return ["SELECT", "SELECT"]  # SQLite reads the feedback apart (the lists come with the session)


# address_check reads fields and the latest decisions; complaint_watch the latest decisions and the state only.
@pytest.mark.parametrize("point", [POINT, "complaint_watch"])
def test_the_session_data_comes_with_the_session_read_and_is_never_guessed(client, settings, point):
    settings.ARBITER_REVISION_CHECK_SECONDS = 3600.0
    _decide(client, "我要投诉", point=point)  # warms the engine, the token cache and this process's guess
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            body = _decide(client, "地址", point=point)
        verbs = [q["sql"].split(None, 1)[0].upper() for q in captured.captured_queries]
        verbs = [v for v in verbs if v not in {"SAVEPOINT", "RELEASE"}]
        # Read (with the lists, in the session's own statement), then the log row: never a guess of the
        # session ("WITH …" on PostgreSQL), which would carry its state alone.
        assert verbs == [*_read(), "INSERT"], [q["sql"][:120] for q in captured.captured_queries]
        assert "keyword_hits" in captured.captured_queries[0]["sql"]
        assert body["rule"]["key"] == "complained_before"


def test_the_impact_preview_and_a_pinned_case_decide_on_what_the_row_recorded(client):
    from rules.config.selectors import config_document
    from rules.engine import compile_config
    from rules.governance.impact import impact_compute
    from rules.governance.regressions import case_evaluate, regression_case_pin

    _fields(client, {"retry_count": 3})
    body = _decide(client)
    assert body["rule"]["key"] == "too_many_retries"
    _fields(client, {"retry_count": 0})  # the session moves on; the row keeps what the rule read
    live = config_document()
    raised = {**live, "thresholds": [{**t, "value": 4} if t["key"] == "max_retries" else t for t in live["thresholds"]]}
    impact = impact_compute(live_document=live, proposed_document=raised)
    assert impact["points"] == [POINT]
    # 3 retries no longer reach the raised limit: that decision (and only it) changes; nothing is an estimate.
    assert impact["changed"] == 1 and impact["matrix"] == {"human_handoff": {"ask_phone": 1}}
    assert impact["masked_facts"] == 0
    case = regression_case_pin(record=_row(body), actor=None)
    assert case.session_read == {"fields": {"retry_count": 3}, "recent": []}
    assert case_evaluate(case, compile_config(raised, revision=0).point(POINT)) == "ask_phone"
    assert case_evaluate(case, compile_config(live, revision=0).point(POINT)) == "human_handoff"

"""Many agents' requests racing on one session, as real concurrent HTTP clients against a running server.

The server is pytest-django's ``live_server`` (Django's threaded WSGI server: one thread per request),
the clients are threads released together by a barrier so their requests really overlap. On PostgreSQL
each move holds the session's row lock; on SQLite (each request on its own connection to a file, see
``tests.support.live_sqlite``) the database write lock, taken before the session is read. Behind either, the
compare-and-set on ``seq``. Exactly one of the racing moves from one ``expected_state`` may win, and no
request may fail with a server error ("database is locked" was one, on SQLite, before the lock).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agents.sessions.models import Anomaly, Session, Transition
from rules.models import DecisionIdempotencyKey, DecisionRecord
from tests.support import move_of
from tests.support.http import Agent, Answer, assert_gap_free, candidate, start_server
from tests.support.live_sqlite import connection_per_request

CLIENTS = 50


@pytest.fixture
def bot(live_server, transactional_db, tmp_path) -> Iterator[Agent]:
    # Django's live server listens with a backlog of 10; 50 clients connecting at once would overflow it
    # and see resets before any request is read. Listening again on Linux only raises the backlog.
    live_server.thread.httpd.socket.listen(2 * CLIENTS)
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        yield start_server(live_server)[0]


def race(n: int, request: Callable[[int], Answer]) -> list[Answer]:
    """Run ``request(i)`` for i in 0..n-1 on n threads that all start at the same moment."""
    barrier = threading.Barrier(n, timeout=30)

    def one(i: int) -> Answer:
        barrier.wait()
        return request(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def json_of(answer: Answer) -> str:
    return json.dumps(answer.body, sort_keys=True)


def describe(answers: list[Answer]) -> Counter[tuple[int, Any]]:
    return Counter((a.status, a.code) for a in answers)


def test_fifty_moves_from_one_expected_state_exactly_one_wins(bot):
    assert bot.start("after_sales", "race-1").status == 201
    # Every client believes the session is in init; they disagree on where it should go.
    targets = ["received", "intent_clarify", "human_handoff"]
    answers = race(CLIENTS, lambda i: bot.move("race-1", targets[i % 3], "init", reason=f"client {i}"))

    assert describe(answers) == {(200, None): 1, (409, "state_mismatch"): CLIENTS - 1}, describe(answers)
    (won,) = [a for a in answers if a.status == 200]
    session = Session.objects.get(key="race-1")
    assert move_of(won.body) == {"from": "init", "state": session.state, "seq": 1}
    assert session.seq == 1
    (row,) = Transition.objects.filter(session=session)
    assert (row.seq, row.from_state, row.to_state) == (1, "init", session.state)
    winner = answers.index(won)
    assert row.reason == f"client {winner}" and row.to_state == targets[winner % 3]  # no lost update
    for lost in answers:
        if lost is not won:
            assert (lost.body["state"], lost.body["seq"]) == (session.state, 1)
            assert lost.content_type == "application/problem+json"


def test_concurrent_moves_with_fresh_expected_states_form_one_chain(bot):
    """Clients that each read the session first and then move: whatever interleaving happens, the
    moves that won form one gap-free chain and every winner's answer is a row of it."""
    bot.start("after_sales", "race-2")
    path = {"init": "received", "received": "refund_review", "refund_review": "escalated", "escalated": "closed"}

    def read_then_move(i: int) -> Answer:
        state = bot.session("race-2")["state"]
        return bot.move("race-2", path.get(state, "closed"), state)

    answers = race(20, read_then_move)
    allowed = {(200, None), (409, "state_mismatch"), (409, "session_closed")}
    assert set(describe(answers)) <= allowed, describe(answers)
    rows = assert_gap_free("race-2")
    won = sorted(a.body["seq"] for a in answers if a.status == 200)
    assert won == [t.seq for t in rows]  # one answer per row, none lost, none twice


def test_concurrent_decisions_with_apply_on_one_session(bot):
    bot.start("after_sales", "race-3")
    turns = [
        {"input": "你们几点下班", "candidate": candidate("general_query", 0.9)},  # -> received
        {"input": "我要退款"},  # -> refund_review (or the fallback, clarify, from init)
    ]
    answers = race(20, lambda i: bot.decide("race-3", "intent_routing", **turns[i % 2]))

    # Deciding holds the session's lock from reading its state to moving it: no decision is made on a
    # stale state, so none is refused as stale either. Once one hands the session to a person (from
    # refund_review everything does), the later ones are refused, with nothing decided or logged.
    seen = describe(answers)
    assert set(seen) <= {(201, None), (409, "session_handed_off")} and seen[(201, None)] >= 1, seen
    decided = [a for a in answers if a.status == 201]
    refused = [a for a in answers if a.status == 409]
    assert all(a.body["state"] == "human_handoff" for a in refused)
    rows = assert_gap_free("race-3")
    # Decision, move and log commit together: one record per answered decision, and each move is the
    # move one of them reported.
    assert DecisionRecord.objects.filter(session_id="race-3").count() == len(decided)
    moved = [a for a in decided if a.body["session"]["from"] != a.body["session"]["state"]]
    moves = {a.body["session"]["seq"]: a for a in moved}
    assert sorted(moves) == [t.seq for t in rows] and len(moved) == len(rows)
    for row in rows:
        answer = moves[row.seq]
        if row.kind == "model_failure":  # the decision's anomaly was one too many: the policy moved it
            assert (row.actor, row.decision_id) == ("system:model-failure-policy", None)
        else:
            assert (row.actor, str(row.decision_id)) == ("support_bot", answer.body["id"])
        assert (row.from_state, row.to_state) == (answer.body["session"]["from"], answer.body["session"]["state"])
    session = Session.objects.get(key="race-3")
    assert session.seq == len(rows) >= 1
    for answer in decided:  # every stay reports a state the session really was in at that seq
        move = answer.body["session"]
        if move["from"] == move["state"]:
            at = Transition.objects.get(session=session, seq=move["seq"]).to_state if move["seq"] else "init"
            assert move["state"] == at


def test_concurrent_retries_with_one_idempotency_key_make_one_move(bot):
    bot.start("after_sales", "race-4")
    answers = race(10, lambda i: bot.move("race-4", "received", "init", key="turn-1"))
    assert describe(answers) == {(200, None): 10}, describe(answers)
    assert {json_of(a) for a in answers} == {json_of(answers[0])}
    assert move_of(answers[0].body) == {"from": "init", "state": "received", "seq": 1}
    assert len(assert_gap_free("race-4")) == 1


def test_concurrent_anomaly_reports_hand_off_once(bot):
    bot.start("change_address", "race-5")
    bot.move("race-5", "awaiting_intent", "created")
    answers = race(
        12, lambda i: bot.post("/api/v1/sessions/race-5/anomalies", {"code": "invalid_json", "detail": str(i)})
    )
    assert describe(answers) == {(201, None): 12}, describe(answers)
    assert sum(a.body["handed_off"] for a in answers) == 1
    session = Session.objects.get(key="race-5")
    assert (session.state, session.anomaly_count, session.seq) == ("human_handoff", 12, 2)
    assert [t.kind for t in assert_gap_free("race-5")] == ["move", "model_failure"]
    assert Anomaly.objects.filter(session_id="race-5").count() == 12  # none lost


def test_racing_writes_never_share_a_sequence_id(bot):
    """The service-wide event sequence (decision_service.sequence) under real concurrency: anomalies and
    decisions written at once, each request on its own connection, all get distinct numbers."""
    bot.start("change_address", "race-seq")
    answers = race(
        20,
        lambda i: (
            bot.post("/api/v1/sessions/race-seq/anomalies", {"code": "invalid_json", "detail": str(i)})
            if i % 2
            else bot.post(
                "/api/v1/decisions",
                {"point": "intent_routing", "input": f"hello {i}", "candidate": candidate("general_query", 0.95)},
            )
        ),
    )
    assert all(a.status == 201 for a in answers), describe(answers)
    numbers = list(Anomaly.objects.filter(session_id="race-seq").values_list("sequence_id", flat=True))
    numbers += list(
        DecisionRecord.objects.filter(session_id="", input__startswith="hello ").values_list("sequence_id", flat=True)
    )
    assert len(numbers) == 20 and None not in numbers and len(set(numbers)) == 20, numbers


@pytest.mark.parametrize("with_session", [False, True], ids=["no_session", "apply_to_a_session"])
def test_concurrent_decides_with_one_idempotency_key_log_one_decision(bot, with_session):
    """The key's uniqueness lives in its own table (the log is partitioned on PostgreSQL): still exact."""
    body: dict[str, Any] = {"point": "intent_routing", "input": "where is my parcel"}
    body["candidate"] = {"decision": "general_query", "confidence": 0.9}
    if with_session:
        bot.start("after_sales", "race-6")
        body.update(session_id="race-6", apply=True)
    answers = race(10, lambda i: bot.post("/api/v1/decisions", body, {"Idempotency-Key": "turn-9"}))
    assert describe(answers) == {(201, None): 10}, describe(answers)
    assert {json_of(a) for a in answers} == {json_of(answers[0])}
    assert DecisionRecord.objects.filter(idempotency_key="turn-9").count() == 1
    assert DecisionIdempotencyKey.objects.get(key="turn-9").decision_id == uuid.UUID(answers[0].body["id"])
    if with_session:
        assert len(assert_gap_free("race-6")) == 1
    # Other keys are not held up by it: ten keys, ten decisions.
    others = race(10, lambda i: bot.post("/api/v1/decisions", body, {"Idempotency-Key": f"other-{i}"}))
    assert describe(others) == {(201, None): 10}, describe(others)
    assert len({a.body["id"] for a in others}) == 10

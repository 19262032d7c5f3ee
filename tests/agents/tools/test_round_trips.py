"""The statements of a tool-call check and of its result, counted with Django's ``CaptureQueriesContext``,
so that a read or a write added to either path shows here (issue 25: both must keep up with a decide).

As in ``tests/agents/sessions/api/test_decide_round_trips.py``: each path is warmed first (the compiled
revision, the agent's token), the revision check interval is long, and the test runs outside a test
transaction (``transactional_db``), so what is counted is what production sends — the transaction's
BEGIN and COMMIT are not statements Django records; the check's savepoint around the gate is.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from tests.support import DEMO
from tests.support.tool_calls import PHONE

TABLES = ("agents_toolattempt", "agents_toolcall", "agents_session", "agents_anomaly")


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """Each statement as "VERB table" ("SELECT FOR UPDATE" for a locking read)."""
    out = []
    for q in captured.captured_queries:
        sql = q["sql"].strip().lstrip("(")
        verb = sql.split(None, 1)[0].upper()
        if verb in {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}:
            out.append(verb)
            continue
        if verb == "WITH":  # a writable CTE: each write it makes, in order
            writes = re.findall(r'\b(INSERT INTO|UPDATE) "(\w+)"', sql)
            out.append("WITH " + " + ".join(f"{w.split()[0]} {t}" for w, t in writes))
            continue
        table = next((t for t in TABLES if f'FROM "{t}"' in sql), None) or next(
            (t for t in TABLES if f'"{t}"' in sql or f"{t} " in sql), "?"
        )
        if verb == "SELECT" and "FOR UPDATE" in sql:
            verb = "SELECT FOR UPDATE"
        out.append(f"{verb} {table}")
    return out


def _check(client: APIClient, session_id: str, operation_id: str) -> tuple[int, list[str]]:
    body = {"tool": "verify_phone", "input": {"phone": PHONE}, "expected_state": "init", "operation_id": operation_id}
    with CaptureQueriesContext(connection) as captured:
        answer = client.post(f"/api/v1/sessions/{session_id}/tool-calls", body, format="json")
    return answer.status_code, _statements(captured)


def _result(client: APIClient, operation_id: str) -> tuple[int, list[str]]:
    body = {"output": {"verified": True}, "duration_ms": 3}
    with CaptureQueriesContext(connection) as captured:
        answer = client.post(f"/api/v1/tool-calls/{operation_id}/result", body, format="json")
    return answer.status_code, _statements(captured)


@pytest.fixture
def client(transactional_db, settings) -> APIClient:
    settings.ARBITER_REVISION_CHECK_SECONDS = 3600.0
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="test demo")
    _, token = agent_create(name="bot", point_keys=["intent_routing"], actor=None, reason="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    for key in ("warm", "k1"):
        answer = client.post("/api/v1/sessions", {"machine": "after_sales", "session_id": key}, format="json")
        assert answer.status_code == 201, answer.json()
    assert _check(client, "warm", "w1")[0] == 201
    assert _result(client, "w1")[0] == 200
    return client


# The session's locking read carries its feedback columns on PostgreSQL; SQLite takes its write lock with
# an UPDATE first and reads the feedback apart (agents.sessions.reads).
LOCK = {
    "postgresql": ["SELECT FOR UPDATE agents_session"],
    "sqlite": ["UPDATE agents_session", "SELECT agents_session", "SELECT agents_anomaly"],
}


# PostgreSQL folds each path's reads into the session's locking read and its writes into one statement
# (agents.tools.statements: "folded"); SQLite sends the statements they fold.
CHECK = {
    "postgresql": [
        "BEGIN",
        "SELECT FOR UPDATE agents_session",  # with its feedback
        # The call as its first attempt leaves it, and that attempt; the state's retry lease and the
        # operation id checked in the same statement (nothing written when either is taken). No savepoint:
        # verify_phone has no breaker or limit, so there is no gate to undo.
        "WITH INSERT agents_toolcall + INSERT agents_toolattempt",
        "COMMIT",
    ],
    "sqlite": [
        "BEGIN",
        *LOCK["sqlite"],
        "SELECT agents_toolcall",  # the operation id: a repeat, a conflict, or a new call
        "SELECT agents_toolcall",  # the state's retry lease
        "SAVEPOINT",  # the gate's refusal leaves nothing behind
        "INSERT agents_toolcall",  # already as its first attempt leaves it: no UPDATE after
        "INSERT agents_toolattempt",
        "RELEASE",
        "COMMIT",
    ],
}

RESULT_LOCKED = {
    # The session (with its feedback), the call and its current attempt, all three locked, the session first.
    "postgresql": ["BEGIN", "SELECT FOR UPDATE agents_toolcall"],
    "sqlite": [
        "BEGIN",
        "SELECT agents_toolcall",  # which session the operation belongs to, before its lock
        *LOCK["sqlite"],
        "SELECT agents_toolattempt",  # the call and its attempt (SQLite has no FOR UPDATE: its write lock)
    ],
}
RESULT_WRITES = {
    "postgresql": ["WITH UPDATE agents_toolattempt + UPDATE agents_toolcall"],
    "sqlite": ["UPDATE agents_toolattempt", "UPDATE agents_toolcall"],
}


def test_a_check_that_starts_a_call(client):
    status, statements = _check(client, "k1", "c1")
    assert status == 201
    assert statements == CHECK[connection.vendor], statements


def test_a_result_and_its_repeat(client):
    assert _check(client, "k1", "c1")[0] == 201
    locked = RESULT_LOCKED[connection.vendor]
    status, statements = _result(client, "c1")
    assert status == 200
    assert statements == [*locked, *RESULT_WRITES[connection.vendor], "COMMIT"], statements
    status, statements = _result(client, "c1")
    assert status == 200
    assert statements == [*locked, "COMMIT"], statements  # a repeat: the stored answer, nothing written


def test_a_repeated_check_goes_the_long_way(client):
    """The operation id already used: the folded INSERT writes nothing, and the check reads the call as
    before and answers the attempt in flight again (PostgreSQL: one statement more than the first check)."""
    first, _ = _check(client, "k1", "c1")
    assert first == 201
    status, statements = _check(client, "k1", "c1")
    assert status == 201
    long_way = [
        "SELECT agents_toolcall",  # the operation id: this call, running
        "SELECT agents_toolattempt",  # its attempt in flight, answered again
    ]
    if connection.vendor == "postgresql":
        expected = [
            "BEGIN",
            "SELECT FOR UPDATE agents_session",
            "WITH INSERT agents_toolcall + INSERT agents_toolattempt",
        ]
    else:
        expected = ["BEGIN", *LOCK["sqlite"]]
    assert statements == [*expected, *long_way, "COMMIT"], statements

"""The database round trips of the hot paths, counted with Django's ``CaptureQueriesContext``.

Each path is asked once to warm this process's caches (the compiled revision, the agent's token), as
any worker is after its first request; the revision check interval is then long, so the counts below
are a request between two checks. The no-session paths run outside a test transaction
(``transactional_db``): what is counted is what production sends — one statement, in autocommit.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create, agent_rotate_token, agent_save, agent_set_points
from agents.sessions.models import Session
from agents.sessions.services import session_create, session_transition
from rules.config.yaml_import import config_import
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord
from tests.support import DEMO, FakeClock

HARD_RULE = {
    "point": "intent_routing",
    "input": "我要投诉你们",
    "candidate": {"decision": "close_order", "confidence": 0.9},
}
CANDIDATE = {
    "point": "intent_routing",
    "input": "where is my parcel",
    "candidate": {"decision": "general_query", "confidence": 0.9},
}
ASK = {"point": "intent_routing", "input": "hello"}
TABLES = (
    "rules_decisionrecord",
    "rules_decisionidempotencykey",
    "rules_candidaterequestcount",
    "agents_session",
    "agents_transition",
    "agents_anomaly",
)


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """Each statement as "VERB table" (savepoints left out: a test's own transaction makes them)."""
    out = []
    for q in captured.captured_queries:
        sql = q["sql"].strip().lstrip("(")  # PostgreSQL parenthesises the members of a UNION
        verb = sql.split(None, 1)[0].upper()
        if verb in {"SAVEPOINT", "RELEASE"}:
            continue
        # The table of the outer FROM (the ORM and the session read quote it), else the first one named.
        table = next((t for t in TABLES if f'FROM "{t}"' in sql), None) or next((t for t in TABLES if t in sql), "?")
        if verb == "SELECT" and "FOR UPDATE" in sql:
            verb = "SELECT FOR UPDATE"
        if verb == "INSERT" and "ON CONFLICT" in sql:
            verb = "UPSERT"
        out.append(f"{verb} {table}")
    return out


def _setup(settings, check_seconds: float = 3600.0) -> tuple[APIClient, str]:
    settings.ARBITER_REVISION_CHECK_SECONDS = check_seconds
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="test demo")
    _, token = agent_create(name="bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client, token


def _decide(client: APIClient, body: dict) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        answer = client.post("/api/v1/decisions", body, format="json")
    return answer.status_code, _statements(captured)


@pytest.mark.parametrize(
    ("body", "status", "statements"),
    [
        pytest.param(HARD_RULE, 201, ["INSERT rules_decisionrecord"], id="hard_rule"),
        pytest.param(CANDIDATE, 201, ["INSERT rules_decisionrecord"], id="candidate"),
        pytest.param(ASK, 200, ["UPSERT rules_candidaterequestcount"], id="needs_candidate"),
    ],
)
def test_a_decide_without_a_session_is_one_statement(transactional_db, settings, body, status, statements):
    client, _ = _setup(settings)
    assert _decide(client, body)[0] == status  # warms the engine and the token cache
    assert _decide(client, body) == (status, statements)
    assert connection.get_autocommit()


def test_a_decide_with_an_idempotency_key_adds_the_key_lookup_and_the_key_row(transactional_db, settings):
    client, _ = _setup(settings)
    assert _decide(client, HARD_RULE)[0] == 201
    with CaptureQueriesContext(connection) as captured:
        answer = client.post("/api/v1/decisions", HARD_RULE, format="json", HTTP_IDEMPOTENCY_KEY="turn-1")
    assert answer.status_code == 201
    # The lookup of an earlier answer (the agent's key table, shared by every write of the agent API, joined
    # to the log: one SELECT), then the key row and
    # the log row: the key cannot be a unique index on the partitioned log. On PostgreSQL one statement
    # writes both (the key in a CTE), in autocommit; SQLite has no writable CTEs: two, in a transaction.
    if connection.vendor == "postgresql":
        writes = ["WITH rules_decisionrecord"]  # WITH … INSERT INTO the keys … INSERT INTO the log
    else:
        writes = ["BEGIN ?", "INSERT rules_decisionidempotencykey", "INSERT rules_decisionrecord", "COMMIT ?"]
    assert _statements(captured) == ["SELECT rules_decisionidempotencykey", *writes]
    assert DecisionIdempotencyKey.objects.get(key="turn-1").decision_id == uuid.UUID(answer.json()["id"])
    with CaptureQueriesContext(connection) as captured:
        again = client.post("/api/v1/decisions", HARD_RULE, format="json", HTTP_IDEMPOTENCY_KEY="turn-1")
    assert (again.status_code, again.json()) == (201, answer.json())
    assert _statements(captured) == ["SELECT rules_decisionidempotencykey"]  # a retry: answered from the log


def test_the_ask_counter_counts_every_request_by_upsert(transactional_db, settings):
    client, _ = _setup(settings)
    for _ in range(3):
        assert _decide(client, ASK)[0] == 200
    assert CandidateRequestCount.objects.get(point="intent_routing").count == 3


def _lock() -> list[str]:
    if connection.vendor == "postgresql":
        return ["SELECT FOR UPDATE agents_session"]
    return ["UPDATE agents_session", "SELECT agents_session"]  # SQLite: the write lock first (sessions_lock)


def _read() -> list[str]:
    if connection.vendor == "postgresql":
        return ["SELECT agents_session"]  # the feedback's counts are columns of the session's row
    return ["SELECT agents_session", "SELECT rules_decisionrecord"]  # SQLite: the two apart


def test_a_decide_with_a_session_it_does_not_move_reads_it_once_without_a_lock(transactional_db, settings):
    client, _ = _setup(settings)
    session_create(agent=AgentRuntime.objects.get(name="bot"), machine_key="after_sales", session_id="s1")
    _decide(client, {**CANDIDATE, "session_id": "s0"})  # warms the engine and the token cache
    status, statements = _decide(client, {**HARD_RULE, "session_id": "s1"})
    assert status == 201
    # The session with its machine and what its feedback hints are counted from (no lock), then the log
    # row, each in autocommit: no BEGIN, no COMMIT.
    assert statements == [*_read(), "INSERT rules_decisionrecord"]
    assert connection.get_autocommit()
    assert DecisionRecord.objects.filter(session_id="s1").latest("created_at").session_state == "init"


def _elsewhere(statement: str) -> None:
    """Run ``statement`` as another process would: on a connection of its own, committed at once."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:  # SQLite: one file, and this test's connection is in autocommit
            cursor.execute(statement)
        return
    import psycopg

    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute(statement)


def _logged_if_state() -> list[str]:
    if connection.vendor == "postgresql":
        return ["WITH agents_session"]  # the read and the INSERT, one statement
    return [*_read(), "INSERT rules_decisionrecord"]  # SQLite keeps no guesses: it reads every time


def test_the_next_decide_of_a_session_is_one_statement_and_a_moved_session_costs_one_more(transactional_db, settings):
    client, _ = _setup(settings)
    agent = AgentRuntime.objects.get(name="bot")
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    _decide(client, {**CANDIDATE, "session_id": "s0"})  # warms the engine and the token cache
    assert _decide(client, {**HARD_RULE, "session_id": "s1"}) == (201, [*_read(), "INSERT rules_decisionrecord"])
    # This process saw the session in "init": the rules decide in it, and one statement logs the row only
    # if the session is still there, returning its feedback basis.
    assert _decide(client, {**HARD_RULE, "session_id": "s1"}) == (201, _logged_if_state())
    assert connection.get_autocommit()
    # Moved by this process: its guess follows the move once it commits.
    session_transition(agent=agent, session_id="s1", to="received", expected_state="init")
    assert _decide(client, {**HARD_RULE, "session_id": "s1"}) == (201, _logged_if_state())
    # Moved by another worker (its own connection, committed): the guess is wrong, the statement logs
    # nothing and returns the state and the basis; the rules decide again in that state, and the row is
    # inserted.
    _elsewhere("UPDATE agents_session SET state = 'refund_review', seq = seq + 1 WHERE key = 's1'")
    status, statements = _decide(client, {**HARD_RULE, "session_id": "s1"})
    assert status == 201
    if connection.vendor == "postgresql":
        assert statements == ["WITH agents_session", "INSERT rules_decisionrecord"]
    rows = DecisionRecord.objects.filter(session_id="s1").order_by("created_at")
    assert [r.session_state for r in rows] == ["init", "init", "received", "refund_review"]
    # …and the guess follows: the next decide is one statement again.
    assert _decide(client, {**HARD_RULE, "session_id": "s1"}) == (201, _logged_if_state())
    assert DecisionRecord.objects.filter(session_id="s1").latest("created_at").session_state == "refund_review"
    # A keyed decide writes its key's row with the log row: it reads the session first, guess or not.
    with CaptureQueriesContext(connection) as captured:
        keyed = client.post(
            "/api/v1/decisions", {**HARD_RULE, "session_id": "s1"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
        )
    assert keyed.status_code == 201
    assert _statements(captured)[: 1 + len(_read())] == ["SELECT rules_decisionidempotencykey", *_read()]


def test_a_decide_whose_candidate_is_an_anomaly_decides_again_under_the_lock(transactional_db, settings):
    client, _ = _setup(settings)
    session_create(agent=AgentRuntime.objects.get(name="bot"), machine_key="after_sales", session_id="s1")
    _decide(client, {**CANDIDATE, "session_id": "s1"})
    wrong = {**CANDIDATE, "session_id": "s1", "candidate": {"decision": "no_such_outcome", "confidence": 0.9}}
    status, statements = _decide(client, wrong)
    assert status == 201
    # The unlocked read saw an anomaly coming: nothing written, then the locked path (in a transaction)
    # writes the row and the anomaly and counts it on the session.
    assert statements[: len(_read())] == _read()
    locked = [s for s in statements[len(_read()) :] if s not in ("BEGIN ?", "COMMIT ?")]
    assert locked[: len(_lock()) + 2] == [*_lock(), "INSERT rules_decisionrecord", "INSERT agents_anomaly"]
    assert DecisionRecord.objects.filter(session_id="s1").count() == 2
    assert Session.objects.get(key="s1").anomaly_count == 1


def test_a_decide_that_moves_the_session(db, settings):
    client, _ = _setup(settings)
    session_create(agent=AgentRuntime.objects.get(name="bot"), machine_key="after_sales", session_id="s1")
    _decide(client, {**CANDIDATE, "session_id": "s0"})
    status, statements = _decide(client, {**CANDIDATE, "session_id": "s1", "apply": True})
    assert status == 201
    # The lock, the log row, the move (compare-and-set on the session, its transition), the move noted on
    # the log row, the feedback hints.
    assert statements == [
        *_lock(),
        "INSERT rules_decisionrecord",
        "UPDATE agents_session",
        "INSERT agents_transition",
        "UPDATE rules_decisionrecord",
        "SELECT rules_decisionrecord",
    ]
    assert DecisionRecord.objects.get(session_id="s1").session_move == {"from": "init", "state": "received", "seq": 1}


def test_a_session_transition(db, settings):
    client, _ = _setup(settings)
    agent = AgentRuntime.objects.get(name="bot")
    session_create(agent=agent, machine_key="after_sales", session_id="s0")
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    client.post("/api/v1/sessions/s0/transitions", {"to": "received", "expected_state": "init"}, format="json")
    with CaptureQueriesContext(connection) as captured:
        answer = client.post(
            "/api/v1/sessions/s1/transitions", {"to": "received", "expected_state": "init"}, format="json"
        )
    assert answer.status_code == 200, answer.json()
    # The lock, the move (compare-and-set, its transition), then the session's feedback hints for the
    # session object the answer carries (one statement; the runtime needs no read before its next step).
    assert _statements(captured) == [
        *_lock(),
        "UPDATE agents_session",
        "INSERT agents_transition",
        "SELECT rules_decisionrecord",
    ]


def test_authentication_reads_nothing_between_revision_checks(db, settings):
    client, _ = _setup(settings)
    _decide(client, CANDIDATE)
    with CaptureQueriesContext(connection) as captured:
        client.post("/api/v1/decisions", {**CANDIDATE, "point": "nope"}, format="json")
    assert captured.captured_queries == []  # unknown point: 404 from the cached revision, nothing read


# --- the staleness window: ARBITER_REVISION_CHECK_SECONDS --------------------------------------------------

WINDOW = 0.3


def _after_window(clock: FakeClock) -> None:
    clock.now += WINDOW + 0.05


def test_a_rotated_token_stops_working_within_the_window(db, settings, clock):
    client, _ = _setup(settings, check_seconds=WINDOW)
    assert _decide(client, CANDIDATE)[0] == 201
    new = agent_rotate_token(agent=AgentRuntime.objects.get(name="bot"), actor=None, reason="rotate")
    _after_window(clock)
    assert _decide(client, CANDIDATE)[0] == 401
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {new}")
    assert _decide(client, CANDIDATE)[0] == 201


def test_a_deactivated_agent_is_refused_within_the_window(db, settings, clock):
    client, _ = _setup(settings, check_seconds=WINDOW)
    assert _decide(client, CANDIDATE)[0] == 201
    agent = AgentRuntime.objects.get(name="bot")
    agent.is_active = False
    agent_save(agent=agent, actor=None, reason="revoke")
    _after_window(clock)
    assert _decide(client, CANDIDATE)[0] == 401


def test_a_deleted_agent_is_refused_within_the_window(db, settings, clock):
    client, _ = _setup(settings, check_seconds=WINDOW)
    assert _decide(client, CANDIDATE)[0] == 201
    AgentRuntime.objects.get(name="bot").delete()  # the admin's delete: simple_history records it
    _after_window(clock)
    assert _decide(client, CANDIDATE)[0] == 401


def test_a_narrowed_scope_applies_within_the_window(db, settings, clock):
    client, _ = _setup(settings, check_seconds=WINDOW)
    assert _decide(client, CANDIDATE)[0] == 201
    agent_set_points(agent=AgentRuntime.objects.get(name="bot"), point_keys=["refund_approval"], actor=None, reason="t")
    _after_window(clock)
    answer = client.post("/api/v1/decisions", CANDIDATE, format="json")
    assert (answer.status_code, answer.json()["code"]) == (403, "point_not_allowed")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL's, per connection")
def test_the_hot_statements_are_prepared_once_per_connection(transactional_db, settings):
    """Planning the session read (session, machine, feedback columns) cost the server more than running
    it; the log INSERT and the read folded into it are prepared as well."""
    client, _ = _setup(settings)
    session_create(agent=AgentRuntime.objects.get(name="bot"), machine_key="after_sales", session_id="s1")
    for _ in range(4):
        assert _decide(client, {**HARD_RULE, "session_id": "s1"})[0] == 201
    for _ in range(2):
        assert _decide(client, CANDIDATE)[0] == 201
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        runs: Counter[str] = Counter()
        forms: Counter[str] = Counter()
        for statement, n in cursor:
            runs[_prepared_kind(statement)] += n
            forms[_prepared_kind(statement)] += 1
    # The first decide of the session reads it, then inserts; the next three guess its state and fold the
    # read into the INSERT; the two without a session insert.
    assert runs == {"session read": 1, "session read + log insert": 3, "log insert": 3}
    # One prepared form a statement, and one more for each pattern of NULLs: the log rows with a rule and
    # without one (tests/test_db.py: a number's size makes no other form).
    assert forms == {"session read": 1, "session read + log insert": 1, "log insert": 2}


def _prepared_kind(statement: str) -> str:
    if statement.startswith("WITH current AS") and 'INSERT INTO "rules_decisionrecord"' in statement:
        return "session read + log insert"
    if statement.startswith("SELECT") and 'FROM "agents_session" s' in statement:
        return "session read"
    if statement.startswith('INSERT INTO "rules_decisionrecord"'):
        return "log insert"
    return statement


def test_prepared_statements_can_be_turned_off_for_a_pooler(monkeypatch):
    from decision_service.env import parse_database_url

    assert parse_database_url("postgres://u@h/d")["OPTIONS"]["prepare_threshold"] is not None
    monkeypatch.setenv("DATABASE_PREPARED_STATEMENTS", "false")
    assert parse_database_url("postgres://u@h/d")["OPTIONS"]["prepare_threshold"] is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the server closes a PostgreSQL connection")
def test_the_session_read_reconnects_when_the_server_closed_the_connection(transactional_db, settings):
    """The session read is often a request's first statement: like Django's own cursors, it runs the
    connection health check first, so a database restarted since the last request goes unnoticed."""
    import psycopg

    from agents.sessions.reads import session_read

    _setup(settings)
    agent = AgentRuntime.objects.get(name="bot")
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    connection.health_check_enabled = True  # CONN_HEALTH_CHECKS, as in production
    connection.health_check_done = False  # as at the start of a request
    session, _ = session_read(agent_id=agent.pk, key="s1")
    assert session is not None and session.state == "init"
    assert connection.connection.info.backend_pid != pid

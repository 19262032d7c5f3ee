"""bin/serve's PostgreSQL connections are bounded by psycopg's pool (ARBITER_DB_POOL_MAX a process) however many
clients hammer it, and a request that cannot get a connection in time is answered 503, not held.

Real parts only: a PostgreSQL cluster of the test's own, whose ``pg_stat_activity`` counts every
connection gunicorn's workers hold; bin/serve with the production settings and gthread workers; clients
over HTTP.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.support.faults import PG_BIN, Client, Postgres, postgres, prepare, production_env, serving

pytestmark = pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="needs PostgreSQL's server binaries")

PROBLEM = "application/problem+json"
WORKERS = 2
THREADS = 16
POOL = 3
CLIENTS = 40
SESSIONS = 20

BACKENDS = """
SELECT count(*) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND datname = 'postgres' AND pid <> pg_backend_pid()
"""


def _watch_connections(pg: Postgres, stop: threading.Event, seen: list[int]) -> None:
    """Count the server's connections to the database (all but this one) until ``stop``."""
    with psycopg.connect(pg.url.replace("postgres://", "postgresql://"), autocommit=True) as watcher:
        while not stop.is_set():
            seen.append(watcher.execute(BACKENDS).fetchone()[0])
            time.sleep(0.01)


def _hammer(port: int, token: str, pg: Postgres, requests: int) -> tuple[Counter[int], int]:
    """``CLIENTS`` threads sending ``requests`` decides (half in a session: a lock and an insert) at once;
    the answers' statuses and the most connections the database had meanwhile."""
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=_watch_connections, args=(pg, stop, seen), daemon=True)
    watcher.start()
    agent = {"Authorization": f"Bearer {token}"}

    def decide(n: int) -> int:
        body: dict[str, object] = {
            "point": "intent_routing",
            "input": f"where is my parcel {n}",
            "candidate": {"decision": "general_query", "confidence": 0.9},
        }
        if n % 2:
            body["session_id"] = f"s{n % SESSIONS}"
        return Client(port).request("POST", "/api/v1/decisions", body, agent).status

    try:
        with ThreadPoolExecutor(CLIENTS) as clients:
            statuses = Counter(clients.map(decide, range(requests)))
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert seen, "the watcher never counted"
    return statuses, max(seen)


def _sessions(port: int, token: str) -> None:
    client = Client(port)
    for i in range(SESSIONS):
        start = {"machine": "after_sales", "session_id": f"s{i}"}
        answer = client.request("POST", "/api/v1/sessions", start, {"Authorization": f"Bearer {token}"})
        assert answer.status == 201, answer.body


def test_connections_stay_within_the_pool_under_many_concurrent_clients():
    with postgres() as pg:
        base = {"DATABASE_URL": pg.url, "ARBITER_THREADS": str(THREADS)}
        token, _ = prepare(production_env(**base))

        with serving(production_env(**base, ARBITER_DB_POOL_MAX=str(POOL)), workers=WORKERS) as port:
            _sessions(port, token)
            statuses, most = _hammer(port, token, pg, 600)
        assert statuses == Counter({201: 600})
        assert most <= WORKERS * POOL, most

        # The same load without the pool: each of the workers' threads keeps a connection of its own, so the
        # load above was enough to pass the bound had the pool not held it.
        with serving(production_env(**base, ARBITER_DB_POOL_MAX="0"), workers=WORKERS) as port:
            statuses, most = _hammer(port, token, pg, 600)
        assert statuses == Counter({201: 600})
        assert most > WORKERS * POOL, most


def test_a_request_that_waits_past_the_pool_timeout_is_503_and_the_pool_recovers():
    with postgres() as pg:
        env = production_env(
            DATABASE_URL=pg.url, ARBITER_THREADS="4", ARBITER_DB_POOL_MAX="1", ARBITER_DB_POOL_TIMEOUT="0.5"
        )
        token, _ = prepare(env)
        agent = {"Authorization": f"Bearer {token}"}
        decide = {
            "point": "intent_routing",
            "input": "where is my parcel",
            "candidate": {"decision": "general_query", "confidence": 0.9},
        }
        with serving(env, workers=1) as port:
            client = Client(port)
            answer = client.request("POST", "/api/v1/sessions", {"machine": "after_sales", "session_id": "held"}, agent)
            assert answer.status == 201, answer.body

            with psycopg.connect(pg.url.replace("postgres://", "postgresql://")) as holder:
                # The session's row locked from outside: a move of it waits in the database, holding the
                # worker's only pooled connection.
                holder.execute("SELECT 1 FROM agents_session WHERE key = 'held' FOR UPDATE")
                with ThreadPoolExecutor(1) as mover:
                    moved = mover.submit(
                        client.request,
                        "POST",
                        "/api/v1/sessions/held/transitions",
                        {"to": "received", "expected_state": "init"},
                        agent,
                    )
                    deadline = time.monotonic() + 30
                    while not holder.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    ).fetchone()[0]:
                        assert time.monotonic() < deadline, "the move never waited for the lock"
                        time.sleep(0.02)

                    started = time.monotonic()
                    refused = client.request("POST", "/api/v1/decisions", decide, agent)
                    waited = time.monotonic() - started
                    holder.rollback()
                    assert moved.result(timeout=30).status == 200

            assert (refused.status, refused.headers["content-type"]) == (503, PROBLEM), refused.body
            assert refused.json()["code"] == "database_unavailable"
            assert "retry-after" in refused.headers
            assert 0.4 <= waited < 5, waited  # the pool's timeout, not gunicorn's 30 s
            # The connection given back, the next request is served.
            assert client.request("POST", "/api/v1/decisions", decide, agent).status == 201

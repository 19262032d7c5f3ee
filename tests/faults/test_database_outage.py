"""PostgreSQL stopped and started under load: 503 database_unavailable meanwhile, every 201 logged, recovery.

Real parts only: a PostgreSQL cluster of the test's own (``pg_ctl stop -m fast`` terminates every
connection, as a restart or a failover does), bin/serve's gunicorn with two workers and the production
settings, and clients over HTTP sending decides with and without a session while it happens.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from tests.support.faults import (
    PG_BIN,
    Answer,
    Client,
    django_shell,
    manage,
    postgres,
    prepare,
    production_env,
    serving,
)

pytestmark = pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="needs PostgreSQL's server binaries")

SESSIONS = 20
PROBLEM = "application/problem+json"

SETUP = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
user = get_user_model().objects.get(username="admin")
browser = SessionStore()
browser[SESSION_KEY] = str(user.pk)
browser[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
browser[HASH_SESSION_KEY] = user.get_session_auth_hash()
browser.create()
result = browser.session_key
"""

LOGGED = """
import json
from rules.models import DecisionRecord
print(json.dumps([str(pk) for pk in DecisionRecord.objects.values_list("id", flat=True)]))
"""


@dataclass
class Load:
    """Decides sent in a loop by a few threads; every answer kept, in order, with the phase it was sent in."""

    port: int
    token: str
    phase: str = "before"
    answers: list[tuple[str, Answer]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def body(self, n: int) -> dict[str, object]:
        if n % 2:  # the hard-rule path, in a session (lock, insert, feedback in one transaction)
            return {
                "point": "intent_routing",
                "input": f"我要投诉你们 {n}",
                "session_id": f"s{n % SESSIONS}",
                "candidate": {"decision": "general_query", "confidence": 0.9},
            }
        return {  # the candidate accepted, no session (one INSERT in autocommit)
            "point": "intent_routing",
            "input": f"where is my parcel {n}",
            "candidate": {"decision": "general_query", "confidence": 0.9},
        }

    def run(self, worker: int) -> None:
        client = Client(self.port, timeout=30)
        n = worker
        while not self.stop.is_set():
            n += 10
            phase = self.phase
            try:
                answer = client.request(
                    "POST", "/api/v1/decisions", self.body(n), {"Authorization": f"Bearer {self.token}"}
                )
            except Exception as exc:  # a timeout or a dropped connection: what must not happen
                with self.lock:
                    self.failures.append(exc)
                continue
            with self.lock:
                self.answers.append((phase, answer))

    def count(self, phase: str, status: int) -> int:
        with self.lock:
            return sum(1 for p, a in self.answers if p == phase and a.status == status)

    def wait_for(self, phase: str, status: int, n: int, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while self.count(phase, status) < n:
            assert not self.failures, self.failures
            assert set(self.summary()) <= {(p, s) for p in ("before", "outage", "after") for s in (201, 503)}, (
                self.summary()
            )
            assert time.monotonic() < deadline, f"fewer than {n} answers {status} {phase}: {self.summary()}"
            time.sleep(0.05)

    def summary(self) -> Counter[tuple[str, int]]:
        with self.lock:
            return Counter((p, a.status) for p, a in self.answers)


def test_a_postgresql_restart_under_load_is_503_meanwhile_and_no_answered_decision_is_unlogged():
    with postgres() as pg:
        env = production_env(DATABASE_URL=pg.url, DATABASE_CONNECT_TIMEOUT="2")
        token, browser_session = prepare(env, SETUP)
        staff_token = manage(env, "create_user_token", "admin").strip().splitlines()[-1]

        with serving(env, workers=2) as port:
            client = Client(port)
            agent = {"Authorization": f"Bearer {token}"}
            for i in range(SESSIONS):
                start = {"machine": "after_sales", "session_id": f"s{i}"}
                answer = client.request("POST", "/api/v1/sessions", start, agent)
                assert answer.status == 201, answer.body

            load = Load(port=port, token=token)
            threads = [threading.Thread(target=load.run, args=(i,), daemon=True) for i in range(3)]
            for thread in threads:
                thread.start()
            try:
                load.wait_for("before", 201, 30)

                pg.stop("fast")
                load.phase = "outage"
                load.wait_for("outage", 503, 30)

                # The staff API and the admin's pages need the database too: 503, not 500.
                staff_auth = {"Authorization": f"Bearer {staff_token}"}
                staff = client.request("GET", "/api/v1/change-requests", headers=staff_auth)
                page = client.request("GET", "/admin/", headers={"Cookie": f"sessionid={browser_session}"})
                ready = client.request("GET", "/readyz")

                pg.start()
                load.phase = "after"
                load.wait_for("after", 201, 30)
            finally:
                load.stop.set()
                for thread in threads:
                    thread.join(timeout=60)

        assert not load.failures, load.failures
        # Only three kinds of answer: logged (201), refused for the outage (503); nothing else, no 500.
        assert {a.status for _, a in load.answers} <= {201, 503}, load.summary()
        refused = [a for _, a in load.answers if a.status == 503]
        assert refused
        for answer in refused:
            assert answer.headers["content-type"] == PROBLEM
            assert answer.json()["code"] == "database_unavailable"
            assert answer.json()["status"] == 503
            assert int(answer.headers["retry-after"]) >= 1

        assert (staff.status, staff.headers["content-type"], staff.json()["code"]) == (
            503,
            PROBLEM,
            "database_unavailable",
        )
        assert "retry-after" in staff.headers
        assert page.status == 503
        assert page.headers["content-type"].startswith("text/plain")
        assert "retry-after" in page.headers
        assert (ready.status, ready.json()["code"]) == (503, "not_ready")

        # Every answered decision is in the log, and the log holds nothing that was not answered.
        answered = {a.json()["id"] for _, a in load.answers if a.status == 201}
        assert (
            len(answered)
            == load.summary()[("before", 201)] + load.summary()[("outage", 201)] + load.summary()[("after", 201)]
        )
        logged = set(django_shell(env, LOGGED))
        assert logged == answered

"""A Celery worker killed (SIGKILL) half-way through a task: a new worker runs it again, and its effect
happens once.

Real parts: a Redis broker and a PostgreSQL of the test's own, workers started as an operator would
(``celery -A decision_service worker``, production settings), and a real task on an input big enough
to be caught half-way: the timeout sweep (``agents.tasks.session_timeouts_sweep``) over hundreds of
sessions that waited too long, each handed off in its own transaction. Half-way is observed in the
database (some sessions handed off, not all); then the worker's whole process group is killed, so
nothing acknowledges the message. Late acknowledgement leaves it with the broker, which hands it to
the next worker once the visibility timeout has passed; the sweep re-checks each session under its
lock, so the sessions already handed off are not handed off again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from celery import Celery
from psycopg import sql

from agents.sessions.models import Session, Transition, TransitionKind
from tests.support import ROOT
from tests.support.faults import PG_BIN, postgres, prepare, production_env, redis_server

pytestmark = pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="needs PostgreSQL's server binaries")

SESSIONS = 300
VISIBILITY_SECONDS = 2
WORKER_OPTIONS = ("--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING")

SETUP = f"""
import datetime as dt, json
from django.utils import timezone
from agents.models import AgentRuntime, Session
from rules.models import StateMachine
machine = StateMachine.objects.exclude(timeouts={{}}).get()
state = next(iter(machine.timeouts))
agent = AgentRuntime.objects.get()
long_ago = timezone.now() - dt.timedelta(hours=1)
Session.objects.bulk_create(
    [Session(agent=agent, key=f"w{{i}}", machine=machine, state=state, state_entered_at=long_ago)
     for i in range({SESSIONS})],
    batch_size=2000,
)
result = machine.handoff_state
"""


@contextlib.contextmanager
def worker(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A worker with one pool process, in a process group of its own (so that it can be killed whole)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "decision_service", "worker", "--concurrency", "1", *WORKER_OPTIONS],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def wait_until(what: str, predicate: object, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("killed", ["whole worker", "pool process"])
def test_a_worker_killed_mid_task_leaves_the_task_to_the_next_worker_and_its_effect_happens_once(killed, monkeypatch):
    with postgres() as pg, redis_server() as broker:
        env = production_env(
            DATABASE_URL=pg.url, CELERY_BROKER_URL=broker.url, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_SECONDS)
        )
        _, handoff = prepare(env, SETUP)
        queue = redis.Redis.from_url(broker.url)
        transitions, sessions = sql.Identifier(Transition._meta.db_table), sql.Identifier(Session._meta.db_table)
        timeouts = sql.SQL("SELECT count(*) FROM {} WHERE kind = %s").format(transitions)
        twice = sql.SQL(
            "SELECT count(*) FROM (SELECT session_id FROM {} WHERE kind = %s GROUP BY session_id HAVING count(*) > 1) t"
        ).format(transitions)
        by_state = sql.SQL("SELECT state, count(*) FROM {} GROUP BY state").format(sessions)

        with psycopg.connect(pg.url.replace("postgres://", "postgresql://"), autocommit=True) as db:

            def handed_off() -> int:
                row = db.execute(timeouts, [TransitionKind.TIMEOUT.value]).fetchone()
                return int(row[0]) if row else 0

            # Celery takes CELERY_BROKER_URL from the environment before its own argument (CI sets it).
            monkeypatch.setenv("CELERY_BROKER_URL", broker.url)
            app = Celery(broker=broker.url)
            with worker(env) as first:
                app.send_task("agents.tasks.session_timeouts_sweep")
                wait_until("the sweep is half-way", lambda: handed_off() >= SESSIONS // 10)
                if killed == "pool process":
                    # The worker sees its pool process die: it hands the task back at once
                    # (task_reject_on_worker_lost) and runs it again in a new pool process.
                    (child,) = Path(f"/proc/{first.pid}/task/{first.pid}/children").read_text().split()
                    os.kill(int(child), signal.SIGKILL)
                    wait_until("every session is handed off", lambda: handed_off() == SESSIONS)
                    wait_until("the task is acknowledged", lambda: queue.hlen("unacked") == 0)
                else:
                    os.killpg(first.pid, signal.SIGKILL)
                    first.wait(timeout=30)
            if killed == "whole worker":
                at_kill = handed_off()
                assert 0 < at_kill < SESSIONS  # killed mid-task
                assert queue.hlen("unacked") == 1  # taken, never acknowledged: still the broker's
                # A real wait, not a fake clock: the redelivery under test is Redis's own visibility timeout
                # (kombu restores an unacknowledged task only once it has passed), which no test clock reaches.
                time.sleep(VISIBILITY_SECONDS + 0.5)
                with worker(env):
                    wait_until("every session is handed off", lambda: handed_off() == SESSIONS)
                    wait_until("the task is acknowledged", lambda: queue.hlen("unacked") == 0)

            assert queue.llen("celery") == 0
            # Once each: no session was handed off twice, and each is where the sweep leaves it.
            assert db.execute(twice, [TransitionKind.TIMEOUT.value]).fetchone() == (0,)
            assert db.execute(by_state).fetchall() == [(handoff, SESSIONS)]

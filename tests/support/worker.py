"""A real Celery worker process for the tests that send tasks through Redis (the PostgreSQL run), and how
long they wait for its answer."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis
from django.conf import settings
from django.db import connection

from tests.support import ROOT

# The retention the worker process runs with (tests/rules/test_worker.py sets the same in this process).
RETENTION_DAYS = 30
# How long a test waits for the worker's answer: the polling deadline, not a sleep.
WAIT_SECONDS = 60


def database_url() -> str:
    """The test database pytest-django created (not the one named in ``DATABASE_URL``)."""
    db = connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"


def result_backend_url() -> str:
    return settings.CELERY_RESULT_BACKEND or settings.CELERY_BROKER_URL  # both redis db 15 in CI


@dataclass(frozen=True)
class Worker:
    queue: str
    process: subprocess.Popen


@contextlib.contextmanager
def celery_worker(**extra_env: str) -> Iterator[Worker]:
    """A Celery worker process consuming a queue of its own; killed (and its queue deleted) afterwards.
    The ``worker`` fixture (tests/conftest.py) runs one for a transactional test. ``extra_env``: more
    environment for the worker (e.g. settings read from the environment, made small for a test)."""
    queue = f"arbiter-test-{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "decision_service.settings.test",
        "DATABASE_URL": database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": result_backend_url(),
        "ARBITER_DECISION_RETENTION_DAYS": str(RETENTION_DAYS),
        **extra_env,
    }
    log = tempfile.NamedTemporaryFile(prefix="arbiter-worker-", suffix=".log", delete=False)  # noqa: SIM115
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "decision_service",
        "worker",
        "--pool=solo",
        "--concurrency=1",
        "-Q",
        queue,
        "-n",
        f"{queue}@%h",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel=INFO",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield Worker(queue=queue, process=process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        log.close()
        output = Path(log.name).read_text(errors="replace")
        Path(log.name).unlink(missing_ok=True)
        print(f"--- celery worker output ---\n{output[-4000:]}")  # shown by pytest when the test fails
        _forget_queue(queue)


def _forget_queue(queue: str) -> None:
    """Remove what kombu keeps in Redis for the test's queue (its messages and exchange bindings)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        keys = [queue, *client.scan_iter(match=f"_kombu.binding*.{queue}")]
        client.delete(*keys)
    finally:
        client.close()

"""Tools' breaker stores for tests: each store with a clock the test moves, Redis when this run has one,
and a process of its own that runs gate operations against the test's database and Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import DEFAULT_DB_ALIAS, connection, connections
from rest_framework.test import APIClient

from agents.tools.breaker_backend import redis_url
from agents.tools.breaker_redis import RedisStore
from agents.tools.breaker_store import DatabaseStore, Store
from decision_service.env import BASE_DIR
from rules.governance.tokens import staff_token_create

REDIS_URL = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
HAS_REDIS = REDIS_URL.startswith("redis://")
START_MS = 1_800_000_000_000


class MsClock:
    """Epoch milliseconds that move only when the test moves them."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def tool_name(prefix: str = "t") -> str:
    """A tool name no other test (nor an earlier run, in a shared Redis) has used."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def make_store(kind: str, clock: MsClock) -> Store:
    if kind == "database":
        return DatabaseStore(clock)
    return RedisStore(REDIS_URL, fallback=DatabaseStore(clock), clock=clock)


BREAKER = {"failure_threshold": 3, "window_s": 10, "half_open_after_ms": 5_000, "trial_calls": 2}


# -- another process -----------------------------------------------------------------------------


def child_env(database_url: str) -> dict[str, str]:
    """The environment of a process that shares this test's database and (when there is one) Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    env.update(DJANGO_SETTINGS_MODULE="decision_service.settings.test", DATABASE_URL=database_url)
    if redis_url():
        env["CELERY_BROKER_URL"] = REDIS_URL
    return env


class SharedDatabase:
    """The test database as other processes and threads open it."""

    def __init__(self, url: str, settings_dict: dict[str, Any] | None) -> None:
        self.url = url
        self._settings = settings_dict

    @contextmanager
    def thread_connection(self) -> Iterator[None]:
        """In a thread: a connection of its own to the shared database, closed at the end."""
        if self._settings is not None:
            memory = connections[DEFAULT_DB_ALIAS]
            connections[DEFAULT_DB_ALIAS] = memory.__class__(self._settings, DEFAULT_DB_ALIAS)
        try:
            yield
        finally:
            connections[DEFAULT_DB_ALIAS].close()


@contextmanager
def shared_database(tmp_path: Path) -> Iterator[SharedDatabase]:
    """The test database where another process (``url``) or thread (``thread_connection``) sees this
    test's committed rows: the test database itself on PostgreSQL; on SQLite (in memory in tests) a
    file copy, which this process then uses too until the block ends. Needs ``transactional_db``."""
    if connection.vendor == "postgresql":
        s = connection.settings_dict
        host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
        yield SharedDatabase(f"postgres://{s['USER']}:{s['PASSWORD']}@{host}:{port}/{s['NAME']}", None)
        return
    import sqlite3

    path = tmp_path / "shared.sqlite3"
    memory = connections[DEFAULT_DB_ALIAS]
    memory.ensure_connection()
    target = sqlite3.connect(path)
    memory.connection.backup(target)
    target.close()
    file_settings = {**memory.settings_dict, "NAME": str(path)}
    mine = memory.__class__(file_settings, DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = mine
    try:
        yield SharedDatabase(f"sqlite:///{path}", file_settings)
    finally:
        mine.close()
        connections[DEFAULT_DB_ALIAS] = memory


# tests.support's package imports models: Django is set up before it is imported.
CHILD = "import django; django.setup(); from tests.support.breaker_child import main; main()"


def another_process(database_url: str, *steps: dict[str, Any]) -> subprocess.Popen[str]:
    """Start gate steps (``{"op": "record"|"state"|"enter", …}``) in a fresh Python process with Django
    set up against ``database_url``; ``answers`` reads what they answered."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(list(steps))],
        env=child_env(database_url),
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def answers(process: subprocess.Popen[str]) -> list[Any]:
    """The process's answers, the name of the store it used first."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    found: list[Any] = json.loads(out.strip().splitlines()[-1])
    return found


def wall_deadline(seconds: float) -> int:
    """Epoch ms ``seconds`` from now (the gate's deadlines are wall-clock times)."""
    import time

    return int((time.time() + seconds) * 1000)


DEMO_TOOLS = ("verify_phone", "query_order", "update_order")


def breakers_forget(*tools: str) -> None:
    """Forget these tools' breakers in Redis (the database's rows go with the test's transaction): a
    shared Redis outlives each test, and the demo's tool names come again in the next one."""
    from agents.tools.breaker_backend import store

    current = store()
    if isinstance(current, RedisStore):
        for tool in tools or DEMO_TOOLS:
            current.clear(tool)


def breakers_forget_all() -> None:
    """Forget every tool's breaker and leases in Redis, whatever the tool's name: run after each test, so
    failures one test reports never open a breaker another test meets (the demo's tool names recur)."""
    import contextlib

    import redis

    from agents.tools.breaker_backend import store

    current = store()
    # A fault test may have taken Redis away: nothing of this test's is kept there then.
    if isinstance(current, RedisStore):
        with contextlib.suppress(redis.RedisError, OSError):
            current.clear_all()


SERVED_HEADERS = {"X-Forwarded-Proto": "https"}


@contextmanager
def two_servers(database: SharedDatabase, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two Arbiter servers (``bin/serve``, production settings, one worker each) in processes of their
    own, on the test's shared database and (when this run has one) its Redis; their base URLs. Each
    starts once it listens (polled with a deadline) and is stopped at the end. For tests of state the
    servers must share: tools' breakers and limits. Production settings redirect plain HTTP to HTTPS:
    send ``SERVED_HEADERS`` (as a TLS-terminating proxy would) with each request."""
    with served(database, tmp_path, 2) as (one, two):
        yield one, two


@contextmanager
def served(database: SharedDatabase, tmp_path: Path, count: int, **extra_env: str) -> Iterator[list[str]]:
    """``count`` Arbiter servers as ``two_servers`` starts them (``extra_env`` added to their
    environment); their base URLs."""
    import signal
    import socket
    import time

    from tests.support.serve import free_port, production_env

    started: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for n in range(1, count + 1):
            port = free_port()
            home = tmp_path / f"server{n}"
            home.mkdir()
            extra = {"CELERY_BROKER_URL": REDIS_URL} if redis_url() else {}
            env = production_env(
                home,
                DATABASE_URL=database.url,
                ARBITER_ADDR=f"127.0.0.1:{port}",
                WEB_CONCURRENCY="1",
                ARBITER_MIGRATE="0",
                SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
                PYTHON=sys.executable,
                **extra,
                **extra_env,
            )
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
            log = (home / "serve.log").open("w")
            started.append(
                subprocess.Popen(
                    [str(BASE_DIR / "bin" / "serve")], env=env, cwd=BASE_DIR, stdout=log, stderr=subprocess.STDOUT
                )
            )
            deadline = time.monotonic() + 120
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert started[-1].poll() is None, (home / "serve.log").read_text()
                    assert time.monotonic() < deadline, "bin/serve did not start listening"
                    time.sleep(0.2)
            urls.append(f"http://127.0.0.1:{port}")
        yield urls
    finally:
        for server in started:
            server.send_signal(signal.SIGTERM)
        for server in started:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def staff(username: str, *permissions: str) -> APIClient:
    user = get_user_model().objects.create_user(username=username, password=f"pw-{username}-123", is_staff=True)
    for dotted in permissions:
        app_label, codename = dotted.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def by_tool(body: dict) -> dict:
    return {item["tool"]: item for item in body["breakers"]}

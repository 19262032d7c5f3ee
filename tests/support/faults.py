"""Throwaway PostgreSQL, Redis and gunicorn for the fault tests: each test stops and starts its own.

The machine's shared PostgreSQL and Redis are never touched. A cluster is made with ``initdb`` in a
temporary directory on a free port; PostgreSQL refuses to run as root, so under root (CI) the cluster
belongs to the ``postgres`` user and its commands run through ``runuser``. Everything started here is
stopped, and its directory removed, by the context managers' exits.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import ROOT

PG_BIN = Path(os.environ.get("ARBITER_PG_BIN", "/usr/lib/postgresql/15/bin"))
PRODUCTION = "decision_service.settings.production"
INITDB = ("-E", "UTF8", "--no-sync", "--no-instructions")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, *, process: subprocess.Popen[Any] | None = None, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the process listening on {port} exited with {process.returncode}") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {port} after {seconds} s") from None
            time.sleep(0.1)


@dataclass
class Postgres:
    """A cluster of our own; ``stop`` and ``start`` as an operator's ``pg_ctl`` would."""

    datadir: Path
    port: int
    run_as: list[str]

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.run_as, str(PG_BIN / "pg_ctl"), "-D", str(self.datadir), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.datadir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.pg_ctl("-o", options, "-l", str(self.datadir / "server.log"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self.pg_ctl("-m", mode, "-w", "stop")


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    run_as: list[str] = []
    top = Path(tempfile.mkdtemp(prefix="arbiter-faults-pg-"))
    if os.geteuid() == 0:  # initdb and postgres refuse root
        owner = pwd.getpwnam("postgres")
        os.chown(top, owner.pw_uid, owner.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    cluster = Postgres(datadir=top / "data", port=free_port(), run_as=run_as)
    try:
        subprocess.run(
            [*run_as, str(PG_BIN / "initdb"), "-D", str(cluster.datadir), "-U", "postgres", "--auth=trust", *INITDB],
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            cluster.stop("immediate")
        shutil.rmtree(top, ignore_errors=True)


@dataclass
class Redis:
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, process=self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None


@contextlib.contextmanager
def redis_server() -> Iterator[Redis]:
    server = Redis(port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def production_env(**extra: str) -> dict[str, str]:
    """This process's environment without Arbiter's settings, plus production settings over plain HTTP."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "ARBITER_", "SECURE_", "CELERY_", "DATABASE_"))
        and k not in {"SECRET_KEY", "ALLOWED_HOSTS", "STATIC_ROOT", "WEB_CONCURRENCY", "DEBUG"}
    }
    return {
        **keep,
        "DJANGO_SETTINGS_MODULE": PRODUCTION,
        "SECRET_KEY": "faults-test-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "PYTHON": sys.executable,
        **extra,
    }


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def django_shell(env: dict[str, str], code: str) -> Any:
    """Run ``code`` in a Django shell of that environment; it prints one JSON value as its last line."""
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])


PREPARE = """
import io, json
from django.core.management import call_command
call_command("migrate", verbosity=0)
out = io.StringIO()
call_command("demo_setup", stdout=out)
token = next(w for w in out.getvalue().split() if w.startswith("arb_"))
"""


def prepare(env: dict[str, str], code: str = "result = None") -> tuple[str, Any]:
    """Migrate, load the demo (its admin and agent), then run ``code``, which sets ``result`` to a JSON
    value: all in one process, since each start of one costs seconds. Returns the demo agent's token and
    ``result``."""
    token, result = django_shell(env, PREPARE + code + "\nprint(json.dumps([token, result]))")
    return token, result


@contextlib.contextmanager
def serving(env: dict[str, str], *, workers: int = 2) -> Iterator[int]:
    """bin/serve (gunicorn, production settings) with ``workers`` workers; yields its port."""
    port = free_port()
    static = tempfile.mkdtemp(prefix="arbiter-faults-static-")
    server = subprocess.Popen(
        [str(ROOT / "bin" / "serve")],
        env={**env, "ARBITER_ADDR": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(workers), "STATIC_ROOT": static}
        | {"ARBITER_MIGRATE": "0"},  # prepare() migrated
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, process=server, seconds=120)
        yield port
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        shutil.rmtree(static, ignore_errors=True)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    """Requests on one connection per request's need: gunicorn's sync workers close it after each answer.

    A request is never sent twice: a decide sent again could be logged twice, and the tests count rows.
    """

    def __init__(self, port: int, *, timeout: float = 30) -> None:
        self.port = port
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        sent.update(headers or {})
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, raw)
        finally:
            connection.close()

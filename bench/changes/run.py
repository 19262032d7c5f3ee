"""Decides while runtimes long-poll ``GET …/changes``: bin/serve with sync workers against gthread workers.

    DATABASE_URL=postgres://…/bench_db .venv/bin/python -m bench.changes.run --output /tmp/changes.md

**It empties the database named by DATABASE_URL.** For each serving (``--servings``, default sync and
gthread: ``ARBITER_THREADS`` 1 and bin/serve's default), bin/serve is started; then for each number of
waiting clients (``--waiters``, default 0 and 200) that many Python threads each long-poll one session of
their own (``wait=30``, again as soon as answered), and wrk loads decide (the candidate path, no session:
every decide moves the service-wide sequence, so the watcher asks about every waiter as often as it
ever does) for ``--duration`` seconds at ``--connections`` connections. Reported: decides a second, p50 /
p99, non-201 answers and socket errors, the long polls answered, PostgreSQL's connections at the end of
the run, and how long a waiting request took to answer after an event of its session was written
(``--wakes`` trials, while the load runs).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.http.run import PATHS, Result, _free_port, settle, wrk

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "after_sales.yaml"
AGENT = "bench_agent"
DECIDE = next(p for p in PATHS if p.name == "decide_candidate")


def prepare(waiters: int) -> str:
    import django
    from django.core.management import call_command

    django.setup()
    from django.utils import timezone

    from agents.runtimes.models import AgentRuntime
    from agents.runtimes.services import agent_create
    from agents.sessions.models import Session
    from rules.config.yaml_import import config_import
    from rules.models import StateMachine

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="bench/changes")
    _, token = agent_create(name=AGENT, point_keys=["intent_routing"], actor=None, reason="bench/changes")
    agent = AgentRuntime.objects.get(name=AGENT)
    machine = StateMachine.objects.get(key="after_sales")
    now = timezone.now()
    keys = [f"w{i}" for i in range(waiters)] + ["wake"]
    Session.objects.bulk_create(
        [Session(agent=agent, key=k, machine=machine, state="init", state_entered_at=now) for k in keys]
    )
    return token


def pg_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


class Pollers:
    """``count`` threads, each long-polling its own session until stopped (then left to their last poll)."""

    def __init__(self, port: int, token: str, count: int) -> None:
        self.port, self.token = port, token
        self.stop = threading.Event()
        self.answered = 0
        self.failed = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._poll, args=(i,), daemon=True) for i in range(count)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _poll(self, i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        after = 0
        headers = {"Authorization": f"Bearer {self.token}"}
        while not self.stop.is_set():
            try:
                conn.request("GET", f"/api/v1/sessions/w{i}/changes?after={after}&wait=30", headers=headers)
                response = conn.getresponse()
                body = response.read()
                ok = response.status == 200
                if ok:
                    after = json.loads(body)["next"]
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                time.sleep(0.5)
            with self.lock:
                self.answered += ok
                self.failed += not ok


def wake_trials(port: int, token: str, trials: int) -> list[float]:
    """Seconds from an anomaly's answer to the answer of a request waiting for the session's next event."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    took: list[float] = []
    for _ in range(trials):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/api/v1/sessions/wake/changes", headers=headers)
        after = json.loads(conn.getresponse().read())["next"]
        answered: list[float] = []

        def wait(after: int = after, answered: list[float] = answered) -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", f"/api/v1/sessions/wake/changes?after={after}&wait=30", headers=headers)
            c.getresponse().read()
            answered.append(time.perf_counter())

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(2.0)  # long enough to be waiting in any serving
        conn.request("POST", "/api/v1/sessions/wake/anomalies", body='{"code": "invalid_json"}', headers=headers)
        conn.getresponse().read()
        written = time.perf_counter()
        waiter.join(60)
        if answered:
            took.append(answered[0] - written)
        conn.close()
    return took


def serve(port: int, threads: int) -> subprocess.Popen[bytes]:
    log = tempfile.NamedTemporaryFile(prefix="arbiter-bench-changes-", suffix=".log", delete=False)  # noqa: SIM115
    server = subprocess.Popen(  # noqa: S603 (bin/serve of this checkout)
        [str(ROOT / "bin" / "serve")],
        cwd=ROOT,
        env={**os.environ, "ARBITER_THREADS": str(threads)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(2)
            return server
        except OSError:
            if server.poll() is not None:
                sys.exit("bin/serve exited: " + Path(log.name).read_text())
            time.sleep(0.2)
    sys.exit("bin/serve did not listen")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servings", default="1,64", help="ARBITER_THREADS values (1: sync workers)")
    parser.add_argument("--waiters", default="0,200")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--wakes", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of uncounted decides per serving")
    parser.add_argument("--workers", type=int, default=0, help="server workers (0: bin/serve's default)")
    parser.add_argument("--output")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database this benchmark may empty.")
    waiter_counts = [int(x) for x in args.waiters.split(",")]
    port = _free_port()
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "bench.http.settings",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",
            "STATIC_ROOT": tempfile.mkdtemp(prefix="arbiter-bench-static-"),
            "ARBITER_ADDR": f"127.0.0.1:{port}",
            "ARBITER_MIGRATE": "0",
            "PYTHON": sys.executable,
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    if args.workers:
        os.environ["WEB_CONCURRENCY"] = str(args.workers)
    token = prepare(max(waiter_counts))
    settle()
    from decision_service import serving

    lines = [
        f"Decide (candidate path, no session) under wrk -c{args.connections}, {args.duration:.0f} s each, "
        f"{serving.workers} workers; waiters long-poll with wait=30.",
        "",
        "| serving | waiters | decides/s | p50 ms | p99 ms | non-201 | socket errors | polls answered (failed) "
        "| PG connections | wake-up s (median, max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    offset = 0
    for threads in (int(x) for x in args.servings.split(",")):
        name = "sync" if threads == 1 else f"gthread ×{threads}"
        server = serve(port, threads)
        try:
            # Warm-up, not counted: each worker's first decides compile the configuration.
            warm = wrk(port, DECIDE, token, seconds=args.warmup, connections=args.connections, offset=offset)
            offset += warm.requests + 1000
            for count in waiter_counts:
                pollers = Pollers(port, token, count)
                pollers.start()
                time.sleep(3 if count else 0)
                wakes: list[float] = []
                waker = threading.Thread(target=lambda w=wakes: w.extend(wake_trials(port, token, args.wakes)))
                waker.start()
                result: Result = wrk(
                    port, DECIDE, token, seconds=args.duration, connections=args.connections, offset=offset
                )
                offset += result.requests + 1000
                connections = pg_connections()
                waker.join(120)
                pollers.stop.set()
                bad = sum(n for s, n in result.statuses.items() if s != "201")
                wake = f"{statistics.median(wakes):.2f}, {max(wakes):.2f}" if wakes else "none answered"
                lines.append(
                    f"| {name} | {count} | {result.rps:.0f} | {result.p50_ms:.1f} | {result.p99_ms:.1f} | {bad} "
                    f"| {result.errors} | {pollers.answered} ({pollers.failed}) | {connections} | {wake} |"
                )
                print(lines[-1], flush=True)
        finally:
            server.terminate()
            server.wait(60)
        time.sleep(2)
    report = "\n".join(lines)
    print(report)
    if args.output:
        Path(args.output).write_text(report + "\n")


if __name__ == "__main__":
    main()

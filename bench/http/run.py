"""Arbiter over real HTTP: gunicorn (bin/serve's configuration) on PostgreSQL, load from wrk on loopback.

    DATABASE_URL=postgres://…/bench_db .venv/bin/python -m bench.http.run --output /tmp/http.md

**It empties the database named by DATABASE_URL** (``flush``), then loads the demo, an agent and the
sessions the paths need. One gunicorn serves every path, in this order, each for ``--duration`` seconds
at ``--connections`` connections (closed loop, wrk), after a short warm-up:

- ``bare``: ``POST /bench/bare``, a plain Django view that parses the JSON body and inserts one row into
  the decision log's table (the benchmark's own URLconf, ``bench/http/urls.py``; not in the product);
- ``decide_hard_rule_session``: ``POST /api/v1/decisions`` whose input holds a high-risk word (a hard
  rule decides), with the ``session_id`` of an existing session (round robin over 200: after the
  warm-up, every worker has seen each of them, so each decide is one statement that checks the state
  the worker last saw the session in);
- ``decide_session_first_seen``: the same with a session no worker has seen before (each used once): the
  session is read, then the row inserted — what a conversation's first turn on a worker costs, and what
  any decide costs whose session moved since its worker last saw it;
- ``decide_candidate``: the LLM's candidate accepted, no session;
- ``transition``: ``POST /api/v1/sessions/{id}/transitions``, each request moving a fresh session;
- ``tool_call_check``: ``POST /api/v1/sessions/{id}/tool-calls``, the demo's ``verify_phone`` with a valid
  phone, each request a new operation on a fresh session (the input checked against its schema, the
  operation and its first attempt written: issue 25);
- ``tool_call_result``: ``POST /api/v1/tool-calls/{operation_id}/result``, an output for an attempt in
  flight (written before the run, one per request), checked against the output schema, recorded, ``done``.

Then each path again at one fixed rate below saturation (half the slowest path's throughput), open loop
(a request is sent on schedule whether or not earlier ones have been answered; latency is measured from
its scheduled time), for p50/p99. After each path the database is checked: log rows (transition rows)
added = 201 (200) answers. During each wrk run the CPU time of the server's processes and of
PostgreSQL's is read from /proc (``cpu_ticks``) and reported per request: where the time goes under load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.http.cpu import cpu_ms_per_request, cpu_ticks
from bench.http.seed import attempts_in_flight, settle

ROOT = Path(__file__).resolve().parents[2]
LUA = Path(__file__).with_name("load.lua")
DEMO = ROOT / "demo" / "after_sales.yaml"
AGENT = "bench_agent"
DECIDE_SESSIONS = 200
FIRST_SEEN_SESSIONS = 80_000  # each decided once: at least this many, more for a long run (main)
TRANSITION_SESSIONS = 120_000


@dataclass(frozen=True)
class Path_:
    name: str
    path: str  # "%d": a per-request number
    body: str
    expect: int  # the status of a logged answer
    mod: int = 0  # the number wraps around (sessions reused); 0: each number once


PATHS = [
    Path_("bare", "/bench/bare", '{"point": "intent_routing", "input": "where is my parcel %d"}', 201),
    Path_(
        "decide_hard_rule_session",
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "我要投诉你们 %d", "session_id": "d%d",'
        ' "candidate": {"decision": "general_query", "confidence": 0.9}}',
        201,
        mod=DECIDE_SESSIONS,
    ),
    Path_(
        "decide_session_first_seen",
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "我要投诉你们 %d", "session_id": "n%d",'
        ' "candidate": {"decision": "general_query", "confidence": 0.9}}',
        201,
    ),
    Path_(
        "decide_candidate",
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "where is my parcel %d",'
        ' "candidate": {"decision": "general_query", "confidence": 0.9}}',
        201,
    ),
    # The same two decides naming the model that made the candidate (issue 26): three more columns in the
    # log's INSERT, and the serializer's nested ``llm``.
    Path_(
        "decide_candidate_llm",
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "where is my parcel %d",'
        ' "candidate": {"decision": "general_query", "confidence": 0.9},'
        ' "llm": {"model": "qwen3-max", "prompt_version": "intent-v7", "latency_ms": 412}}',
        201,
    ),
    Path_(
        "decide_hard_rule_session_llm",
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "我要投诉你们 %d", "session_id": "d%d",'
        ' "candidate": {"decision": "general_query", "confidence": 0.9},'
        ' "llm": {"model": "qwen3-max", "prompt_version": "intent-v7", "latency_ms": 412}}',
        201,
        mod=DECIDE_SESSIONS,
    ),
    Path_("transition", "/api/v1/sessions/t%d/transitions", '{"to": "received", "expected_state": "init"}', 200),
    Path_(
        "tool_call_check",
        "/api/v1/sessions/k%d/tool-calls",
        '{"tool": "verify_phone", "input": {"phone": "13800138000"}, "expected_state": "init", "operation_id": "c%d"}',
        201,
    ),
    Path_("tool_call_result", "/api/v1/tool-calls/r%d/result", '{"output": {"verified": true}, "duration_ms": 3}', 200),
]


@dataclass
class Result:
    requests: int = 0
    seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    errors: int = 0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(first_seen: int = FIRST_SEEN_SESSIONS) -> str:
    """Empty the database, load the demo, one agent, its sessions; return the agent's token."""
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
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="bench/http")
    _, token = agent_create(name=AGENT, point_keys=["intent_routing"], actor=None, reason="bench/http")
    agent = AgentRuntime.objects.get(name=AGENT)
    machine = StateMachine.objects.get(key="after_sales")
    now = timezone.now()
    keys = [f"d{i}" for i in range(DECIDE_SESSIONS)] + [f"t{i}" for i in range(TRANSITION_SESSIONS)]
    keys += [f"{prefix}{i}" for prefix in "nkq" for i in range(first_seen)]
    Session.objects.bulk_create(
        [Session(agent=agent, key=k, machine=machine, state="init", state_entered_at=now) for k in keys],
        batch_size=5000,
    )
    attempts_in_flight(agent, first_seen, now)
    return token


def counts() -> dict[str, int]:
    from agents.sessions.models import Transition
    from agents.tools.models import AttemptOutcome, ToolAttempt
    from bench.http.views import BARE_AGENT
    from rules.models import DecisionRecord

    return {
        "bare": DecisionRecord.objects.filter(agent_name=BARE_AGENT).count(),
        "decide": DecisionRecord.objects.filter(agent_name=AGENT).count(),
        "transition": Transition.objects.count(),
        "tool_check": ToolAttempt.objects.filter(call__operation_id__startswith="c").count(),
        "tool_result": ToolAttempt.objects.filter(
            outcome=AttemptOutcome.OK, call__operation_id__startswith="r"
        ).count(),
    }


def wrk(port: int, p: Path_, token: str, *, seconds: float, connections: int, offset: int) -> Result:
    env = {
        **os.environ,
        "BENCH_PATH": p.path,
        "BENCH_BODY": p.body,
        "BENCH_TOKEN": "" if p.name == "bare" else token,
        "BENCH_MOD": str(p.mod),
        "BENCH_OFFSET": str(offset),
        "BENCH_THREADS": "1",
    }
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{round(seconds)}s",
            "--latency",
            "-s",
            str(LUA),
            f"http://127.0.0.1:{port}",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("BENCH "))
    data = json.loads(line[6:])
    return Result(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_ms"],
        p99_ms=data["p99_ms"],
        statuses=Counter({k[1:]: v for k, v in data["statuses"].items()}),
        errors=data["connect_errors"] + data["read_errors"] + data["write_errors"] + data["timeouts"],
    )


def paced(port: int, p: Path_, token: str, *, rate: float, seconds: float, offset: int) -> Result:
    """Open loop: request i is sent at start + i/rate; its latency counts from then."""
    n = max(1, int(rate * seconds))
    headers = {"Content-Type": "application/json"}
    if p.name != "bare":
        headers["Authorization"] = f"Bearer {token}"
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def one(i: int) -> None:
        number = (offset + i) % p.mod if p.mod else offset + i
        scheduled = start + i / rate
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = p.body.replace("%d", str(number)).encode()
            conn.request("POST", p.path.replace("%d", str(number)), body, headers)
            response = conn.getresponse()
            response.read()
            conn.close()
            status = str(response.status)
        except Exception as exc:  # counted, never lost in a future
            status = f"error {type(exc).__name__}"
        took = time.perf_counter() - scheduled
        with lock:
            latencies.append(took)
            statuses[status] += 1

    with ThreadPoolExecutor(max_workers=64) as pool:
        for i in range(n):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, i)
    latencies.sort()
    return Result(
        requests=n,
        seconds=seconds,
        p50_ms=latencies[len(latencies) // 2] * 1000,
        p99_ms=latencies[int(len(latencies) * 0.99)] * 1000,
        statuses=statuses,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=0, help="server workers (0: bin/serve's default)")
    parser.add_argument(
        "--server",
        choices=["gunicorn", "granian"],
        default="gunicorn",
        help="gunicorn: bin/serve; granian: the same app, settings and worker count under granian's WSGI "
        "interface (pip install granian; a comparison only, not a dependency)",
    )
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of wrk per path")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="closed-loop runs of every path, interleaved (bare first in odd rounds, last in even ones); each "
        "path's share of bare is read per round, against the bare run of the same round, and the median given",
    )
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0.0, help="fixed rate (0: half the slowest path's)")
    parser.add_argument("--paced-seconds", type=float, default=10.0)
    parser.add_argument("--output", help="also write the Markdown report here")
    parser.add_argument(
        "--only",
        help="comma-separated paths to run (bare is always run: every path is read against it), "
        "e.g. tool_call_check,tool_call_result",
    )
    args = parser.parse_args()
    paths = PATHS
    if args.only:
        wanted = {"bare", *args.only.split(",")}
        unknown = wanted - {p.name for p in PATHS}
        if unknown:
            sys.exit(f"unknown paths: {', '.join(sorted(unknown))}")
        paths = [p for p in PATHS if p.name in wanted]

    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database this benchmark may empty.")
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed (apt-get install wrk).")
    port = _free_port()
    static = tempfile.mkdtemp(prefix="arbiter-bench-static-")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "bench.http.settings",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            # Plain HTTP on loopback: no TLS proxy in front to redirect to.
            "SECURE_SSL_REDIRECT": "false",
            "STATIC_ROOT": static,
            "ARBITER_ADDR": f"127.0.0.1:{port}",
            "ARBITER_MIGRATE": "0",
            "PYTHON": sys.executable,
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    if args.workers:
        os.environ["WEB_CONCURRENCY"] = str(args.workers)
    # decide_session_first_seen uses each session once: enough for its warm-up, wrk and fixed-rate runs
    # at 4,000 req/s, well above what two cores serve; checked after the run.
    first_seen = max(FIRST_SEEN_SESSIONS, round((3 + args.duration * args.rounds + args.paced_seconds) * 4000))
    token = prepare(first_seen)
    settle()
    from decision_service import serving

    log = tempfile.NamedTemporaryFile(prefix="arbiter-bench-serve-", suffix=".log", delete=False)  # noqa: SIM115
    command = [str(ROOT / "bin" / "serve")]
    if args.server == "granian":
        subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, check=True)
        command = [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--workers", str(serving.workers), "decision_service.wsgi:application"]
    server = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit("bin/serve exited: " + Path(log.name).read_text())
                time.sleep(0.2)
        time.sleep(2)
        offsets = dict.fromkeys((p.name for p in PATHS), 0)
        rows = {
            "bare": "bare",
            "decide_hard_rule_session": "decide",
            "decide_session_first_seen": "decide",
            "decide_candidate": "decide",
            "decide_candidate_llm": "decide",
            "decide_hard_rule_session_llm": "decide",
            "transition": "transition",
            "tool_call_check": "tool_check",
            "tool_call_result": "tool_result",
        }

        def advance(p: Path_, used: int) -> None:
            offsets[p.name] += used + 1000

        closed: dict[str, Result] = {}
        per_round: dict[str, list[float]] = {p.name: [] for p in paths}
        cpu_ms: dict[str, dict[str, float]] = {}
        checks: dict[str, tuple[int, int]] = {p.name: (0, 0) for p in paths}
        lost: dict[str, int] = dict.fromkeys(per_round, 0)
        ticks_used: dict[str, list[dict[str, float]]] = {p.name: [] for p in paths}
        for number in range(args.rounds):
            # Odd rounds run bare first, even ones last: a drift of the machine over the run (a checkpoint,
            # the tables growing) falls on both sides of bare instead of always after it.
            for p in paths if number % 2 == 0 else list(reversed(paths)):
                before = counts()[rows[p.name]]
                warm = Result()
                if number == 0:
                    warm = wrk(port, p, token, seconds=3, connections=args.connections, offset=offsets[p.name])
                    advance(p, warm.requests)
                ticks_before = cpu_ticks(server.pid)
                run = wrk(port, p, token, seconds=args.duration, connections=args.connections, offset=offsets[p.name])
                ticks_after = cpu_ticks(server.pid)
                ticks_used[p.name].append(cpu_ms_per_request(ticks_before, ticks_after, run.requests))
                advance(p, run.requests)
                print(f"round {number + 1} {p.name}: {run}", file=sys.stderr)
                per_round[p.name].append(run.rps)
                total = closed.setdefault(p.name, Result())
                total.requests += run.requests
                total.seconds += run.seconds
                total.statuses += run.statuses
                total.errors += run.errors
                # The latencies of the last round (wrk reports percentiles, which do not add up).
                total.p50_ms, total.p99_ms = run.p50_ms, run.p99_ms
                answered = warm.statuses[str(p.expect)] + run.statuses[str(p.expect)]
                a, b = checks[p.name]
                checks[p.name] = (a + answered, b + counts()[rows[p.name]] - before)
                # Requests wrk gave up on (timeouts, resets) may still have been served and logged.
                lost[p.name] += (
                    warm.errors
                    + run.errors
                    + sum(v for k, v in (warm.statuses + run.statuses).items() if k != str(p.expect))
                )
        for name, used in ticks_used.items():
            cpu_ms[name] = {group: statistics.median(u[group] for u in used) for group in used[0]}
        # At least 1 req/s: a path slower than 2 req/s would round to a rate of 0 and send nothing.
        rate = args.rate or max(1, round(min(r.rps for r in closed.values()) / 2))
        fixed: dict[str, Result] = {}
        paced_checks: dict[str, tuple[int, int]] = {}
        for p in paths:
            before = counts()[rows[p.name]]
            fixed[p.name] = paced(port, p, token, rate=rate, seconds=args.paced_seconds, offset=offsets[p.name])
            advance(p, fixed[p.name].requests)
            paced_checks[p.name] = (fixed[p.name].statuses[str(p.expect)], counts()[rows[p.name]] - before)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        shutil.rmtree(static, ignore_errors=True)
        print(f"server log: {log.name}", file=sys.stderr)

    for once in ("decide_session_first_seen", "tool_call_check", "tool_call_result"):
        if offsets[once] > first_seen:
            sys.exit(f"{once} ran past its {first_seen:,} sessions: its numbers are not valid.")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    bare = closed["bare"].rps
    lines = [
        (
            (
                f"gunicorn {serving.workers} gthread workers of {serving.threads} threads (bin/serve's configuration)"
                if serving.worker_class == "gthread"
                else f"gunicorn {serving.workers} sync workers (bin/serve's configuration, ARBITER_THREADS=1)"
            )
            if args.server == "gunicorn"
            else f"granian {serving.workers} workers, WSGI interface, its default threads"
        )
        + f", PostgreSQL {pg} on loopback, "
        f"{os.cpu_count()} cores shared by server, database and load generator; wrk -t1 -c{args.connections}, "
        f"{args.duration:g} s per path after a 3 s warm-up"
        + (
            f", {args.rounds} interleaved rounds (req/s: all rounds; CPU: median; latency: last)"
            if args.rounds > 1
            else ""
        )
        + f"; fixed rate {rate:g} req/s for {args.paced_seconds:g} s.",
        "",
        "| path | req/s (wrk) | of bare | p50 / p99 ms (wrk, saturated) | p50 / p99 ms at "
        f"{rate:g} req/s | CPU ms a request (wrk run): server · PostgreSQL | answers | rows added − logged "
        "answers: wrk runs (≥ 0) · fixed rate (= 0) |",
        "| --- | ---: | ---: | --- | --- | --- | --- | --- |",
    ]
    # wrk stops with requests in flight (and gives up on some on the way): the server may log a row whose
    # answer wrk never reads. So a wrk run may add more rows than the answers it counted, never fewer (an
    # answered decision is always logged); the fixed-rate run waits for every answer: exactly equal.
    for p in paths:
        r, f = closed[p.name], fixed[p.name]
        answered, added = checks[p.name]
        p_answered, p_added = paced_checks[p.name]
        closed_ok = added >= answered
        ok = "✓" if closed_ok and p_added == p_answered else "✗ MISMATCH"
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted((r.statuses + f.statuses).items()))
        errors = f", wrk errors or other statuses {lost[p.name]}" if lost[p.name] else ""
        lines.append(
            f"| {p.name} | {r.rps:,.0f} | {r.rps / bare:.0%} | {r.p50_ms:.1f} / {r.p99_ms:.1f} | "
            f"{f.p50_ms:.1f} / {f.p99_ms:.1f} | {cpu_ms[p.name]['server']:.2f} · {cpu_ms[p.name]['postgres']:.2f} | "
            f"{statuses}{errors} | "
            f"{added:,} − {answered:,} = {added - answered} · "
            f"{p_added:,} − {p_answered:,} = {p_added - p_answered} {ok} |"
        )
    if args.rounds > 1:
        lines += ["", f"Share of bare per round ({args.rounds} rounds, each against the bare run of its round):", ""]
        for p in paths[1:]:
            shares = [rps / bare_rps for rps, bare_rps in zip(per_round[p.name], per_round["bare"], strict=True)]
            lines.append(
                f"- {p.name}: median **{statistics.median(shares):.0%}**, "
                f"rounds {', '.join(f'{s:.0%}' for s in shares)}"
            )
    report = "\n".join(lines)
    print(report)
    if args.output:
        Path(args.output).write_text(report + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

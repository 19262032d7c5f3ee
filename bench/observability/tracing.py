"""What OpenTelemetry tracing costs a decide: off (the default), and on with every trace exported or none.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.observability.tracing

Runs itself in child processes, one per mode, since tracing is set up once per process from the
environment as a served process does it (``decision_service.tracing.setup_from_env``):

- **off**: no ``OTEL_*`` variable. The request path keeps one hook, ``tracing.span``, which returns a
  shared do-nothing context manager; TracingMiddleware is not in the middleware chain at all;
- **on, all exported**: ``OTEL_TRACES_SAMPLER=always_on``, OTLP/HTTP to a sink in the child (a thread
  that reads each export and answers 200), batched as in production;
- **on, none exported**: ``OTEL_TRACES_SAMPLER=traceidratio`` with ratio 0: every span recorded and held
  until its request's server span ends, then dropped (no error) — the cost of "errors always, the rest
  by ratio" for the traces that are not kept.

Each child times, in alternating rounds, per call: **span hook** (``with tracing.span(…)``, nothing
inside), **a request's spans** (TracingMiddleware around a view that opens the decide span and a move's
inside it, ten attributes each — what a decide with ``apply`` adds — minus the view alone), **decide**
(``POST /api/v1/decisions``, the candidate path, no session) and **decide session** (a hard rule decides,
with the ``session_id`` of an existing session), through Django's test client on the database
``DATABASE_URL`` names (unset: SQLite in a temporary file). The machine is shared: compare the rows of one
run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.observability.run import _per_call_us

MODES: dict[str, dict[str, str]] = {
    "off": {},
    "on, all exported": {"OTEL_TRACES_SAMPLER": "always_on"},
    "on, none exported": {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
}


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


def child(rounds: int, mode: str) -> dict[str, float]:
    import logging

    os.environ["DJANGO_SETTINGS_MODULE"] = "decision_service.settings.test"
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tempfile.mkdtemp(prefix='arbiter-otel-')) / 'bench.sqlite3'}"
    os.environ.pop("CELERY_BROKER_URL", None)
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        del os.environ[name]
    if MODES[mode]:
        sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
        threading.Thread(target=sink.serve_forever, daemon=True).start()
        os.environ.update(MODES[mode], OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{sink.server_address[1]}")
    import django

    django.setup()
    from django.core.management import call_command
    from rest_framework.test import APIClient

    import decision_service
    from agents.runtimes.models import AgentRuntime
    from agents.runtimes.services import agent_create
    from agents.sessions.services import session_create
    from tests.support import load_demo

    # A tree from before tracing (--before): the same requests, no hook to time. (Its absence is checked in
    # the tree itself: the editable install would find this tree's module.)
    tracing: Any = None
    if (Path(decision_service.__file__).parent / "tracing.py").exists():
        from decision_service import tracing

        assert tracing.setup_from_env() == bool(MODES[mode])
    call_command("migrate", verbosity=0, interactive=False)
    load_demo()
    name = f"bench_{os.getpid()}"
    _, token = agent_create(name=name, point_keys=["intent_routing"], actor=None, reason="bench")
    agent = AgentRuntime.objects.get(name=name)
    sessions = [session_create(agent=agent, machine_key="after_sales", session_id=f"{name}-{i}").key for i in range(50)]
    logging.disable(logging.CRITICAL)
    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {
        "point": "intent_routing",
        "input": "where is my parcel",
        "candidate": {"decision": "general_query", "confidence": 0.9},
    }
    turn = iter(range(10**9))

    def decide() -> None:
        assert client.post("/api/v1/decisions", body, format="json").status_code == 201

    def decide_session() -> None:
        session = {"point": "intent_routing", "input": "我要投诉你们", "session_id": sessions[next(turn) % 50]}
        assert client.post("/api/v1/decisions", session, format="json").status_code == 201

    def hook() -> None:
        if tracing is not None:
            with tracing.span("arbiter.bench"):
                pass

    from django.http import HttpResponse
    from django.test import RequestFactory

    request = RequestFactory().post("/api/v1/decisions", HTTP_TRACEPARENT=f"00-{'ab' * 16}-{'cd' * 8}-01")
    answer = HttpResponse(b"ok")
    attributes = {f"arbiter.attribute_{i}": "intent_routing" for i in range(10)}

    def view(_: object) -> HttpResponse:
        # What a decide with apply opens: the decide span and the move's, with ten attributes each.
        with tracing.span("arbiter.decide") as decide_span, tracing.span("arbiter.session.move") as move_span:
            if decide_span is not None:
                decide_span.set_attributes(attributes)
                move_span.set_attributes(attributes)
        return answer

    def bare_view(_: object) -> HttpResponse:
        return answer

    middleware: Any = bare_view
    if tracing is not None and tracing.active():
        middleware = tracing.TracingMiddleware(view)

    def spans() -> None:
        middleware(request)

    for _ in range(50):  # warm-up
        decide()
        decide_session()
    results: dict[str, list[float]] = {"hook": [], "spans": [], "decide": [], "decide_session": []}
    for _ in range(rounds):
        results["hook"].append(_per_call_us(hook, 20_000))
        results["spans"].append(_per_call_us(spans, 2_000) - _per_call_us(lambda: bare_view(request), 2_000))
        results["decide"].append(_per_call_us(decide, 200))
        results["decide_session"].append(_per_call_us(decide_session, 200))
    if tracing is not None:
        tracing.flush()
    return {k: statistics.median(v) for k, v in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each mode, alternating")
    parser.add_argument(
        "--before",
        help="also run, as mode 'before', a tree without tracing (e.g. an export of main) with this interpreter",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rounds, args.child)))
        return
    rows = []
    here = Path(__file__).resolve().parents[2]
    trees = ([("before", Path(args.before).resolve())] if args.before else []) + [(m, here) for m in MODES]
    for run in range(1, args.repeat + 1):
        for mode, tree in trees:
            if tree != here:  # this script, run in the other tree (which may not have it)
                shutil.copy(Path(__file__), tree / "bench" / "observability" / "tracing.py")
            child_mode = mode if tree == here else "off"
            done = subprocess.run(  # noqa: S603 - this script, with its own interpreter
                [
                    sys.executable,
                    "-m",
                    "bench.observability.tracing",
                    "--child",
                    child_mode,
                    "--rounds",
                    str(args.rounds),
                ],
                capture_output=True,
                text=True,
                cwd=tree,
            )
            if done.returncode != 0:
                sys.exit(f"{mode} in {tree} failed:\n{done.stderr}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            hook = "–" if tree != here else f"{r['hook']:.2f}"
            request_spans = "–" if tree != here or mode == "off" else f"{r['spans']:.0f}"
            rows.append(
                f"| {run} | {mode} | {hook} | {request_spans} | {r['decide']:.0f} | {r['decide_session']:.0f} |"
            )
    print(
        "| run | tracing | span hook µs | a request's spans µs | decide µs (candidate, no session) "
        "| decide µs (session, hard rule) |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

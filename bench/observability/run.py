"""What the metrics and the request log cost a decide, next to what the decide costs.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.observability.run

Runs itself twice in child processes — with ``PROMETHEUS_MULTIPROC_DIR`` (``bin/serve``'s mode: every
value a write to a memory-mapped file under a lock) and without (one process's registry) — since
prometheus-client picks its mode when it is imported. Each child times, in alternating rounds, per call:

- **decide hooks**: what ``decision_make`` adds to a decide (``metrics.decision_made``: one counter, one
  histogram; run at once as ``transaction.on_commit`` does in autocommit);
- **request middleware**: ``RequestLogMiddleware`` around a view that returns at once, minus that view
  alone (request id, in-progress gauge, request histogram, one JSON log line written to /dev/null);
- **decide request**: ``POST /api/v1/decisions`` (the candidate path, no session) through Django's test
  client and the whole stack — the yardstick — on the database ``DATABASE_URL`` names (the demo is
  imported into it and an agent added; unset: SQLite in a temporary file, where each insert's commit
  waits for the disk).

The machine is shared: compare the rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def child(rounds: int) -> dict[str, float]:
    import logging

    os.environ["DJANGO_SETTINGS_MODULE"] = "decision_service.settings.test"
    os.environ["ARBITER_LOG_FORMAT"] = "json"
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tempfile.mkdtemp(prefix='arbiter-obs-')) / 'bench.sqlite3'}"
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command
    from django.http import HttpResponse
    from django.test import RequestFactory
    from rest_framework.test import APIClient

    from agents.runtimes.services import agent_create
    from decision_service import metrics
    from decision_service.request_log import RequestLogMiddleware
    from tests.support import load_demo

    call_command("migrate", verbosity=0, interactive=False)
    load_demo()
    _, token = agent_create(name=f"bench_{os.getpid()}", point_keys=["intent_routing"], actor=None, reason="bench")
    devnull = open(os.devnull, "w")  # noqa: SIM115 - for the whole run
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(devnull)
    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {
        "point": "intent_routing",
        "input": "where is my parcel",
        "candidate": {"decision": "general_query", "confidence": 0.9},
    }

    def hooks() -> None:
        metrics.decision_made(
            point="intent_routing", ruled_by="llm_candidate", decision="general_query", evaluated_us=7
        )

    request = RequestFactory().get("/healthz")
    answer = HttpResponse(b"ok")

    def view(_: object) -> HttpResponse:
        return answer

    middleware = RequestLogMiddleware(view)

    def decide() -> None:
        assert client.post("/api/v1/decisions", body, format="json").status_code == 201

    for _ in range(50):  # warm-up
        decide()
    results: dict[str, list[float]] = {"hooks": [], "middleware": [], "decide": []}
    for _ in range(rounds):
        results["hooks"].append(_per_call_us(hooks, 20_000))
        results["middleware"].append(
            _per_call_us(lambda: middleware(request), 5_000) - _per_call_us(lambda: view(request), 5_000)
        )
        results["decide"].append(_per_call_us(decide, 200))
    return {k: statistics.median(v) for k, v in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rounds)))
        return
    rows = []
    for mode in ("multiprocess", "single"):
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        with tempfile.TemporaryDirectory(prefix="arbiter-obs-metrics-") as directory:
            if mode == "multiprocess":
                env["PROMETHEUS_MULTIPROC_DIR"] = directory
            done = subprocess.run(  # noqa: S603 - this script, with its own interpreter
                [sys.executable, "-m", "bench.observability.run", "--child", "--rounds", str(args.rounds)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        added = result["hooks"] + result["middleware"]
        rows.append(
            f"| {mode} | {result['hooks']:.1f} | {result['middleware']:.1f} | {result['decide']:.0f} | "
            f"{added / result['decide']:.1%} |"
        )
    print(
        "| metrics mode | decide hooks µs | request middleware µs | decide request µs (test client) "
        "| hooks + middleware ÷ decide |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""The client's benchmark: Arbiter calls per turn over the reference conversations, and the client's
overhead per call against raw httpx.

    .venv/bin/python -m bench.client.run [--calls 300] > /tmp/client-bench.md

It makes its own server: a fresh SQLite database in a temporary directory (migrated, the after-sales
demo imported, one agent without a rate limit), served by Django's threaded WSGI server on loopback —
the same server pytest-django's ``live_server`` runs. Overhead: the same requests (a point read and a
decision a rule settles) sent alternately through ``httpx.Client`` and through ``Arbiter``, each over
one kept-alive connection; the p50 of each and the difference are printed (read the difference, not
the absolute numbers: the server's time is in both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def _server() -> tuple[str, str, Any]:
    directory = tempfile.mkdtemp(prefix="arbiter-client-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{Path(directory) / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.test")
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    import logging

    from django.core.management import call_command
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    from agents.runtimes.services import agent_create
    from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
    from rules.config.yaml_import import config_import
    from tests.support import DEMO_TEXT

    logging.disable(logging.INFO)  # the request log would dominate what is measured
    call_command("migrate", verbosity=0)
    # The demo plus what the reference conversations need beyond it (the address change's point), as
    # bin/agent-demo and the tests load it.
    config_import(text=agent_config_text(DEMO_TEXT), source="bench", actor=None, reason="client benchmark")
    _, token = agent_create(name="bench_bot", point_keys=list(AGENT_POINTS), actor=None, reason="client benchmark")

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", token, server


def _sweep_later(session: Any, seconds: float) -> None:
    """A conversation's silence: the timeout sweep run as if ``seconds`` had passed (same process and
    database as the server), as bin/agent-demo does through ``manage.py shell``."""
    import datetime as dt

    from django.utils import timezone

    from agents.sessions.timeouts import session_timeouts_sweep

    session_timeouts_sweep(now=timezone.now() + dt.timedelta(seconds=seconds + 1))


def calls_per_turn(url: str, token: str) -> list[str]:
    from arbiter_client import Arbiter

    from examples.after_sales_agent.conversations import conversation_paths
    from examples.after_sales_agent.run import conversation_run, summary

    lines = ["## Arbiter calls per turn (reference conversations, scripted model)", ""]
    lines += ["| conversation | turns | Arbiter calls per turn | model calls | who decided |", "|---|---|---|---|---|"]
    outcomes = []
    points: dict[tuple[str, int], Any] = {}
    with Arbiter(url, token) as arbiter:
        for path in conversation_paths():
            outcome = conversation_run(arbiter, path, out=None, points=points, wait=_sweep_later)
            if outcome.mismatches:
                raise SystemExit("\n".join(outcome.mismatches))
            outcomes.append(outcome)
            turns = outcome.turns
            if not turns:  # tool calls only (issue 25): measured by bench/tool_policy
                continue
            lines.append(
                f"| {outcome.name} | {len(turns)} | {sum(t.arbiter_calls for t in turns) / len(turns):.2f} "
                f"({', '.join(str(t.arbiter_calls) for t in turns)}) | {sum(t.model_calls for t in turns)} "
                f"| {', '.join(t.decided_by for t in turns)} |"
            )
    total = summary(outcomes)
    lines += [
        "",
        f"All: {total['turns']:.0f} turns, **{total['arbiter_calls_per_turn']:.2f} Arbiter calls per turn**, "
        f"{total['model_calls_per_turn']:.2f} model calls per turn, "
        f"{total['turns_without_model_call']:.0%} of the turns without a model call. "
        "Creating each conversation's session (one call per conversation) is not counted in its turns.",
    ]
    return lines


def overhead(url: str, token: str, calls: int, *, transport: Any = None) -> list[str]:
    import uuid

    import httpx
    from arbiter_client import Arbiter

    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    body = {"point": "intent_routing", "input": "我要投诉"}
    raw = httpx.Client(base_url=url, headers=headers, transport=transport)
    client = Arbiter(url, token, http=httpx.Client(base_url=url, headers=headers, transport=transport))
    paths = {
        "GET /points/intent_routing": (
            lambda: raw.get("/api/v1/points/intent_routing").raise_for_status(),
            lambda: client.point("intent_routing"),
        ),
        "POST /decisions (a rule decides)": (
            # The client sends an Idempotency-Key with every write: so does the plain request.
            lambda: raw.post(
                "/api/v1/decisions", json=body, headers={"Idempotency-Key": uuid.uuid4().hex}
            ).raise_for_status(),
            lambda: client.decide("intent_routing", input="我要投诉"),
        ),
    }
    where = "an in-memory transport (client code only)" if transport else "the live server, alternating"
    lines = [
        f"## Client overhead per call: raw httpx vs Arbiter, over {where}",
        "",
        "| request | httpx p50 µs | Arbiter p50 µs | difference µs |",
        "|---|---|---|---|",
    ]
    for name, (plain, wrapped) in paths.items():
        for _ in range(20):  # warm both connections and the server's caches
            plain()
            wrapped()
        times: dict[str, list[float]] = {"httpx": [], "arbiter": []}
        for _ in range(calls):
            for label, call in (("httpx", plain), ("arbiter", wrapped)):
                start = time.perf_counter()
                call()
                times[label].append((time.perf_counter() - start) * 1e6)
        a, b = statistics.median(times["httpx"]), statistics.median(times["arbiter"])
        lines.append(f"| {name} | {a:.0f} | {b:.0f} | {b - a:+.0f} |")
    raw.close()
    client.http.close()
    return lines


def _canned_transport() -> Any:
    """Answers as the server would, from memory: what is left to time is the two clients' own code."""
    import json

    import httpx

    point = json.dumps({"key": "intent_routing", "outcomes": [], "revision": 1}).encode()
    decision = json.dumps({"id": "d", "decision": "human_handoff", "needs_candidate": False}).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        content = decision if request.method == "POST" else point
        return httpx.Response(
            201 if request.method == "POST" else 200, content=content, headers={"Content-Type": "application/json"}
        )

    return httpx.MockTransport(answer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args(argv)
    url, token, server = _server()
    try:
        lines = [
            *calls_per_turn(url, token),
            "",
            *overhead(url, token, args.calls),
            "",
            *overhead(url, token, args.calls * 10, transport=_canned_transport()),
        ]
    finally:
        server.shutdown()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seed 000's tool-call experiment, reproduced against a real Arbiter (issue 25).

    .venv/bin/python -m bench.tool_policy.run [--conversations 200] [--outage-seconds 24] > /tmp/tool-policy.md

It makes its own server, as bench/client does: a fresh SQLite database in a temporary directory
(migrated; the after-sales demo with the reference agent's additions imported; one agent without a rate
limit), served by Django's threaded WSGI server on loopback. ``DATABASE_URL=postgres://…`` uses that
database instead (**it is flushed first**). The demo's tool contracts are changed for the run so that it
takes a minute, not an hour: ``query_order``'s ``RATE_LIMIT_EXCEEDED`` backs off from 5 ms (cap 40 ms,
5 retries, jitter 0.5) and its breaker opens after 5 failures within 5 s and lets one trial through
after 2 s; ``query_order_unguarded`` is the same contract without a breaker.

1. **Rate limits.** N conversations of the reference agent, each verifying a phone and querying two
   orders, against the mock order system (examples/after_sales_agent/tools.py) whose ``query_order``
   answers ``RATE_LIMIT_EXCEEDED`` 30 % of the time: through ``session.call_tool`` (Arbiter's policy)
   against the same agent calling the same tools directly (one try, an error is a failure). A
   conversation succeeds when every call returns its output. It calls ``query_order_unguarded`` by
   default: the retry policy alone, as the seed measured it (``--rate-limit-tool query_order`` adds the
   breaker, which ignores ``RATE_LIMIT_EXCEEDED`` as the demo's does, so a 30 % rate limit does not
   open it).
2. **Outage.** Callers query orders one after another for ``--outage-seconds``; the upstream is down in
   the middle third (every call answers ``UPSTREAM_UNAVAILABLE``). With the breaker (``query_order``)
   against without (``query_order_unguarded``), the same callers: per call, whether it reached the
   upstream and failed (the error rate callers see), was refused at once by the open breaker
   (``circuit_open``: it never reached the upstream), or succeeded; and the calls the failing upstream
   received.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ORDERS = ("SO20240001", "SO20240002")
PHONE = "13800138000"
FAST_RATE_LIMIT = {"kind": "exponential", "base_ms": 5, "cap_ms": 40, "jitter": 0.5}
FAST_BREAKER = {
    "failure_threshold": 5,
    "window_s": 5,
    "half_open_after_ms": 2000,
    "trial_calls": 1,
    "ignore_codes": ["RATE_LIMIT_EXCEEDED"],  # as the demo's: a rate limit is not an outage
}
UNGUARDED = "query_order_unguarded"


def bench_config(demo_text: str) -> str:
    """The reference agent's configuration with the bench's short backoffs and breaker."""
    from examples.after_sales_agent.config import agent_config_text

    document = yaml.safe_load(agent_config_text(demo_text))
    tools = {t["name"]: t for t in document["tools"]}
    query = tools["query_order"]
    for code in query["error_codes"]:
        if code["code"] == "RATE_LIMIT_EXCEEDED":
            code.update(max_retries=5, backoff=dict(FAST_RATE_LIMIT))
    query["circuit_breaker"] = dict(FAST_BREAKER)
    query.pop("max_concurrent", None)
    unguarded = {k: v for k, v in query.items() if k != "circuit_breaker"}
    document["tools"].append({**unguarded, "name": UNGUARDED, "description": "query_order without a breaker."})
    for machine in document["machines"]:
        if machine["key"] == "after_sales":
            machine["actions"]["init"].append(UNGUARDED)
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def _server() -> tuple[str, str, Any]:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        directory = tempfile.mkdtemp(prefix="arbiter-tool-bench-")
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
    from examples.after_sales_agent.config import AGENT_POINTS
    from rules.config.yaml_import import config_import
    from tests.support import DEMO_TEXT

    logging.disable(logging.WARNING)  # the request log and the anomalies' warnings would dominate
    call_command("migrate", verbosity=0)
    if os.environ["DATABASE_URL"].startswith("postgres"):
        call_command("flush", interactive=False, verbosity=0)
    config_import(text=bench_config(DEMO_TEXT), source="bench", actor=None, reason="tool policy benchmark")
    _, token = agent_create(name="bench_bot", point_keys=list(AGENT_POINTS), actor=None, reason="tool bench")

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", token, server


def rate_limits(url: str, token: str, conversations: int, fraction: float, seed: int, tool: str) -> list[str]:
    from arbiter_client import Arbiter, ToolError

    from examples.after_sales_agent.agent import AfterSalesAgent
    from examples.after_sales_agent.llm import ScriptedModel
    from examples.after_sales_agent.tools import OrderSystem

    def script() -> list[tuple[str, dict[str, Any]]]:
        return [("verify_phone", {"phone": PHONE})] + [(tool, {"order_id": o}) for o in ORDERS]

    rows = []
    # Without Arbiter: the same tools, called once each; any error fails the conversation.
    plain = OrderSystem(rate_limit_fraction=fraction, seed=seed)
    ok = 0
    started = time.perf_counter()
    for _ in range(conversations):
        try:
            for name, given in script():
                plain.functions()[name.replace(UNGUARDED, "query_order")](given)
        except ToolError:
            continue
        ok += 1
    rows.append(("without Arbiter (one try)", ok, plain, 0, time.perf_counter() - started, Counter[str]()))

    upstream = OrderSystem(rate_limit_fraction=fraction, seed=seed)
    outcomes: Counter[str] = Counter()
    ok = 0
    with Arbiter(url, token) as arbiter:
        agent = AfterSalesAgent(arbiter, ScriptedModel(), out=None)
        requests_before = arbiter.counter.requests
        started = time.perf_counter()
        for number in range(conversations):
            session = agent.start(session_id=f"rl-{number}")
            done = True
            for name, given in script():
                fn = upstream.functions()[name.replace(UNGUARDED, "query_order")]
                turn = agent.use_tool(session, name, given, fn)
                outcomes[turn.outcome + (f" {turn.code}" if turn.code and turn.code != turn.outcome else "")] += 1
                if turn.outcome != "done":
                    done = False
                    break
            ok += done
        took = time.perf_counter() - started
        requests = arbiter.counter.requests - requests_before
        agent.close()
    rows.append(("with Arbiter (`session.call_tool`)", ok, upstream, requests, took, outcomes))
    lines = [
        f"### Rate limits: `query_order` answers RATE_LIMIT_EXCEEDED {fraction:.0%} of the time",
        "",
        f"{conversations} conversations, each `verify_phone` then `{tool}` twice (seed {seed}).",
        "",
        "| agent | conversations that succeeded | upstream calls (query_order failures) | Arbiter requests "
        "per conversation | seconds | outcomes of the calls |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, succeeded, system, requests, took, seen in rows:
        failed = system.failures["query_order:RATE_LIMIT_EXCEEDED"]
        calls = sum(system.calls.values())
        described = ", ".join(f"{k}: {v}" for k, v in sorted(seen.items())) or "—"
        lines.append(
            f"| {label} | {succeeded}/{conversations} = **{succeeded / conversations:.1%}** | {calls} ({failed}) | "
            f"{requests / conversations:.1f} | {took:.1f} | {described} |"
        )
    return lines


def _caller(
    url: str,
    token: str,
    tool: str,
    upstream: Any,
    seen: list[tuple[str, str, int]],
    lock: threading.Lock,
    window: tuple[float, float, float],
    index: int,
) -> None:
    """One caller: a new conversation per call, one order query each, until the window ends."""
    from arbiter_client import Arbiter

    from examples.after_sales_agent.agent import AfterSalesAgent
    from examples.after_sales_agent.llm import ScriptedModel

    down_from, down_to, end = window
    with Arbiter(url, token) as arbiter:
        agent = AfterSalesAgent(arbiter, ScriptedModel(), out=None)
        number = 0
        while (now := time.perf_counter()) < end:
            phase = "before" if now < down_from else "down" if now < down_to else "after"
            session = agent.start(session_id=f"{tool}-{index}-{number}")
            number += 1
            turn = agent.use_tool(session, tool, {"order_id": ORDERS[1]}, upstream.query_order)
            with lock:
                seen.append((phase, turn.outcome, turn.tool_runs))
        agent.close()


def outage(url: str, token: str, seconds: float, callers: int) -> list[str]:
    from examples.after_sales_agent.tools import OrderSystem

    lines = [
        f"### Outage: the order service down for the middle third of {seconds:g} s, {callers} callers",
        "",
        "Per call made while the upstream was down: it reached the failing upstream and failed (the error "
        "callers see), was refused at once by the open breaker (never reached the upstream), or succeeded.",
        "",
        "| tool | calls while down | reached the upstream and failed | refused at once (circuit_open) | "
        "succeeded | upstream calls while down | calls after the outage: succeeded |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for tool, label in (("query_order", "with the breaker"), (UNGUARDED, "without a breaker")):
        lock = threading.Lock()
        seen: list[tuple[str, str, int]] = []  # (phase, outcome, upstream runs)
        start = time.perf_counter()
        down_from, down_to = start + seconds / 3, start + 2 * seconds / 3
        upstream = OrderSystem(outage=(down_from, down_to))

        window = (down_from, down_to, start + seconds)
        threads = [
            threading.Thread(target=_caller, args=(url, token, tool, upstream, seen, lock, window, i))
            for i in range(callers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        during = [(o, runs) for phase, o, runs in seen if phase == "down"]
        after = [o for phase, o, _ in seen if phase == "after"]
        n = max(1, len(during))
        failed = sum(1 for o, runs in during if o != "done" and runs > 0)
        refused = sum(1 for o, runs in during if o == "circuit_open")
        ok = sum(1 for o, _ in during if o == "done")
        runs = sum(r for _, r in during)
        recovered = sum(1 for o in after if o == "done")
        lines.append(
            f"| {label} | {len(during)} | {failed} = **{failed / n:.1%}** | {refused} = {refused / n:.1%} | "
            f"{ok} | {runs} | {recovered}/{len(after)} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--fraction", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outage-seconds", type=float, default=24.0)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument(
        "--rate-limit-tool",
        choices=[UNGUARDED, "query_order"],
        default=UNGUARDED,
        help="the contract the rate-limit part calls: without a breaker (the retry policy alone, as the seed "
        "measured it), or with the breaker, which ignores RATE_LIMIT_EXCEEDED (ignore_codes)",
    )
    parser.add_argument("--part", choices=["all", "rate_limits", "outage"], default="all")
    args = parser.parse_args(argv)
    url, token, server = _server()
    try:
        lines = []
        if args.part in ("all", "rate_limits"):
            lines += rate_limits(url, token, args.conversations, args.fraction, args.seed, args.rate_limit_tool)
            lines.append("")
        if args.part in ("all", "outage"):
            lines += outage(url, token, args.outage_seconds, args.callers)
    finally:
        server.shutdown()
    from django.db import connection

    lines += ["", f"Database: {connection.vendor}; Python {sys.version.split()[0]}."]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

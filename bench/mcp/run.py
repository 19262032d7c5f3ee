"""The MCP gateway's cost (issue 27): the latency it adds to a ``tools/call``, and its throughput on bin/serve.

    DATABASE_URL=postgres://…/bench_mcp .venv/bin/python -m bench.mcp.run [--calls 2000] [--seconds 15] > /tmp/mcp.md

**It empties the database named by DATABASE_URL** (``flush``), then loads the demo — its ``orders`` MCP
server pointed at the upstream this script starts (examples/after_sales_agent/tools_server.py, a uvicorn
process of its own) — one agent and its sessions, and serves Arbiter with ``bin/serve`` (gunicorn,
production settings, bin/serve's worker count) on loopback.

1. **Added latency.** One process, one event loop, the SDK's own client code (``ClientSession`` over
   streamable HTTP) twice: a connection straight to the upstream, and one to Arbiter's ``/mcp`` with the
   agent token and a session in ``init`` (where the demo allows the ``orders.*`` tools). The same tool with
   the same arguments, the two requests interleaved (which goes first alternates), ``--calls`` pairs after a
   warm-up: p50 and p99 of each and the difference — what the gateway adds (the policy check, the attempt
   recorded, the forward, the output checked and the result recorded). ``orders.verify_phone`` (no
   breaker, no concurrency limit) and ``orders.query_order`` (a breaker and ``max_concurrent``: shared
   state read and written per call).
2. **Throughput.** wrk cannot speak MCP (a JSON-RPC body per request, answers to read for ``isError``), so
   the load is a closed loop of Python threads, each with its own ``httpx`` client and Arbiter session,
   POSTing raw JSON-RPC ``tools/call`` requests (stateless: no ``initialize`` needed) for ``--seconds``:
   calls answered per second, and the share that were not tool results. The same against the upstream
   alone says how much of the ceiling is the upstream's. The load generator shares the machine's cores
   with the server, the database and the upstream: a lower bound, as bench/http's numbers are.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "after_sales.yaml"
AGENT = "bench_mcp_agent"
SESSIONS = 64
TOOLS = {
    "verify_phone": {"phone": "13800138000"},
    "query_order": {"order_id": "SO20240002"},
}


def prepare(upstream_url: str) -> str:
    """Empty the database, load the demo (its orders server at ``upstream_url``), one agent, its sessions;
    return the agent's token."""
    import django
    from django.core.management import call_command

    django.setup()
    from django.utils import timezone

    from agents.management.commands.demo_setup import demo_text_with_orders_url
    from agents.runtimes.models import AgentRuntime
    from agents.runtimes.services import agent_create
    from agents.sessions.models import Session
    from rules.config.yaml_import import config_import
    from rules.models import StateMachine

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    text = demo_text_with_orders_url(DEMO.read_text(encoding="utf-8"), upstream_url)
    config_import(text=text, source=str(DEMO), actor=None, reason="bench/mcp")
    _, token = agent_create(name=AGENT, point_keys=["intent_routing"], actor=None, reason="bench/mcp")
    agent = AgentRuntime.objects.get(name=AGENT)
    machine = StateMachine.objects.get(key="after_sales")
    now = timezone.now()
    Session.objects.bulk_create(
        [
            Session(agent=agent, key=f"m{i}", machine=machine, state="init", state_entered_at=now)
            for i in range(SESSIONS)
        ]
    )
    return token


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def latency(upstream_url: str, gateway_url: str, token: str, calls: int, warmup: int) -> dict[str, Any]:
    """Interleaved pairs of the same call, direct and through the gateway: milliseconds of each."""
    import httpx2
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}", "Arbiter-Session": "m0"}
    found: dict[str, Any] = {}
    async with (
        httpx2.AsyncClient(timeout=30) as direct_http,
        httpx2.AsyncClient(headers=headers, timeout=30) as gateway_http,
        streamable_http_client(upstream_url, http_client=direct_http) as (dr, dw),
        streamable_http_client(gateway_url, http_client=gateway_http) as (gr, gw),
        ClientSession(dr, dw) as direct,
        ClientSession(gr, gw) as gateway,
    ):
        await direct.initialize()
        await gateway.initialize()
        listed = [t.name for t in (await gateway.list_tools()).tools]
        for tool, arguments in TOOLS.items():
            if f"orders.{tool}" not in listed:
                raise SystemExit(f"the gateway does not offer orders.{tool} (it lists {listed})")

            async def timed(session: ClientSession, name: str) -> float:
                started = time.perf_counter_ns()
                result = await session.call_tool(name, arguments)  # noqa: B023 (awaited within the loop turn)
                elapsed = (time.perf_counter_ns() - started) / 1e6
                if not isinstance(result, types.CallToolResult) or result.is_error:
                    raise SystemExit(f"{name} failed: {result}")
                return elapsed

            pairs: list[tuple[float, float]] = []
            for i in range(warmup + calls):
                if i % 2:
                    d = await timed(direct, tool)
                    g = await timed(gateway, f"orders.{tool}")
                else:
                    g = await timed(gateway, f"orders.{tool}")
                    d = await timed(direct, tool)
                if i >= warmup:
                    pairs.append((d, g))
            direct_ms = [d for d, _ in pairs]
            gateway_ms = [g for _, g in pairs]
            found[tool] = {
                "direct": direct_ms,
                "gateway": gateway_ms,
                "added": [g - d for d, g in pairs],
            }
    return found


def throughput(url: str, token: str | None, tool: str, *, threads: int, seconds: float) -> dict[str, float]:
    """Closed-loop raw JSON-RPC ``tools/call`` POSTs from ``threads`` threads for ``seconds``."""
    import httpx

    answered = [0] * threads
    failed = [0] * threads
    stop = time.monotonic() + seconds

    def work(n: int) -> None:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token is not None:
            headers |= {"Authorization": f"Bearer {token}", "Arbiter-Session": f"m{1 + n % (SESSIONS - 1)}"}
        name = f"orders.{tool}" if token is not None else tool
        with httpx.Client(headers=headers, timeout=30) as http:
            i = 0
            while time.monotonic() < stop:
                i += 1
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
                body["params"] = {"name": name, "arguments": TOOLS[tool]}
                response = http.post(url, json=body)
                ok = response.status_code == 200 and response.json().get("result", {}).get("isError") is False
                answered[n] += ok
                failed[n] += not ok

    started = time.monotonic()
    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - started
    return {"calls_per_s": sum(answered) / elapsed, "failed": sum(failed), "answered": sum(answered)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _report(
    args: argparse.Namespace, found: dict[str, Any], rates: dict[tuple[str, str], dict[str, float]], workers: int
) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    print(f"## MCP gateway: added latency and throughput (bench/mcp, commit {commit.stdout.strip()})\n")
    print(
        f"- Machine: {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}; "
        f"server, PostgreSQL, the upstream and the load generator share them. bin/serve: {workers} gunicorn workers."
    )
    print(
        f"- Command: `.venv/bin/python -m bench.mcp.run --calls {args.calls} --seconds {args.seconds:g} "
        f"--threads {args.threads}`\n"
    )
    print("### Added latency per tools/call (ms; interleaved pairs, same SDK client code, same upstream)\n")
    columns = ["tool", "pairs", "direct p50", "gateway p50", "added p50", "direct p99", "gateway p99", "added p99"]
    print("| " + " | ".join([*columns, "median of pair differences"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tool, data in found.items():
        d, g = data["direct"], data["gateway"]
        print(
            f"| {tool} | {len(d)} | {percentile(d, 0.5):.2f} | {percentile(g, 0.5):.2f} | "
            f"**{percentile(g, 0.5) - percentile(d, 0.5):.2f}** | {percentile(d, 0.99):.2f} | "
            f"{percentile(g, 0.99):.2f} | {percentile(g, 0.99) - percentile(d, 0.99):.2f} | "
            f"{statistics.median(data['added']):.2f} |"
        )
    print(f"\n### Throughput (closed loop, {args.threads} threads, {args.seconds:g} s each, raw JSON-RPC POSTs)\n")
    print("| target | tool | calls/s | answered | not a tool result |")
    print("|---|---|---|---|---|")
    for (target, tool), r in rates.items():
        print(f"| {target} | {tool} | {r['calls_per_s']:.0f} | {r['answered']} | {r['failed']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured pairs per tool (after --warmup)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=15, help="each throughput run")
    parser.add_argument("--threads", type=int, default=16, help="load generator threads")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database this benchmark may empty.")
    port = _free_port()
    static = tempfile.mkdtemp(prefix="arbiter-bench-static-")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "decision_service.settings.production",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback: no TLS proxy in front
            "STATIC_ROOT": static,
            "ARBITER_ADDR": f"127.0.0.1:{port}",
            "ARBITER_MIGRATE": "0",
            "PYTHON": sys.executable,
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)

    upstream = subprocess.Popen(
        [sys.executable, "-m", "examples.after_sales_agent.tools_server", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    log = tempfile.NamedTemporaryFile(prefix="arbiter-bench-mcp-", suffix=".log", delete=False)  # noqa: SIM115
    server = None
    try:
        assert upstream.stdout is not None
        upstream_url = upstream.stdout.readline().strip()  # printed once it accepts connections
        if not upstream_url:
            sys.exit("the upstream MCP server did not start")
        token = prepare(upstream_url)
        # The production settings log every httpx request at INFO: not in this process's timed loops.
        for name in ("httpx", "httpx2"):
            logging.getLogger(name).setLevel(logging.WARNING)
        from decision_service import serving

        server = subprocess.Popen(  # noqa: S603 - bin/serve of this repository
            [str(ROOT / "bin" / "serve")], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("bin/serve did not start: " + Path(log.name).read_text())
                time.sleep(0.2)
        gateway_url = f"http://127.0.0.1:{port}/mcp"
        found = asyncio.run(latency(upstream_url, gateway_url, token, args.calls, args.warmup))
        rates: dict[tuple[str, str], dict[str, float]] = {}
        for tool in TOOLS:
            rates[("upstream alone", tool)] = throughput(
                upstream_url, None, tool, threads=args.threads, seconds=args.seconds
            )
            rates[("gateway", f"orders.{tool}")] = throughput(
                gateway_url, token, tool, threads=args.threads, seconds=args.seconds
            )
        _report(args, found, rates, serving.workers)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        upstream.terminate()
        upstream.wait(timeout=30)
        print(f"\nserver log: {log.name}", file=sys.stderr)


if __name__ == "__main__":
    main()

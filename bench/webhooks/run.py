"""What webhooks add to a session's move into the handoff state, for an agent with no subscription.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.webhooks.run --rounds 10 --calls 200
    .venv/bin/python -m bench.webhooks.run                 # SQLite in a temporary file

Times ``session_transition`` (the service, no HTTP) moving a fresh after_sales session from ``init`` into
``human_handoff`` — a move that is a webhook event (``session.handed_off``) — in alternating rounds:
**shipped** (the event looked up in the per-process list of subscriptions, which holds another agent's
subscription, and nothing recorded) and **without** (``agents.sessions.moves`` with the webhook calls
replaced by no-ops, as before webhooks). ``ARBITER_REVISION_CHECK_SECONDS`` is the default 0.5 s, as in
production. Per call latencies, p50 and p95, and their ratio.

The machine is shared: compare the rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.demo_db import demo_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    demo_database("arbiter-hooks-")
    from django.conf import settings
    from django.db import connection

    from agents.runtimes.services import agent_create
    from agents.sessions import moves
    from agents.sessions.services import session_create, session_transition
    from agents.webhooks.services import webhook_subscription_create

    settings.ARBITER_REVISION_CHECK_SECONDS = 0.5
    tag = os.getpid()
    agent, _ = agent_create(name=f"hooks_{tag}", point_keys=[], actor=None, reason="bench")
    other, _ = agent_create(name=f"hooked_{tag}", point_keys=[], actor=None, reason="bench")
    webhook_subscription_create(
        agent=other, url="https://hooks.example.com/", event_kinds=["session.handed_off"], actor=None, reason="bench"
    )
    shipped = (moves.webhook_event, moves._event_kind)
    without = (lambda *a, **k: [], lambda **k: None)
    times: dict[str, list[float]] = {"shipped": [], "without": []}
    n = 0
    for i in range(args.rounds):
        for variant in ("shipped", "without") if i % 2 == 0 else ("without", "shipped"):
            moves.webhook_event, moves._event_kind = shipped if variant == "shipped" else without
            for _ in range(args.calls):
                n += 1
                key = f"b{tag}-{n}"
                session_create(agent=agent, machine_key="after_sales", session_id=key)
                started = time.perf_counter_ns()
                session_transition(agent=agent, session_id=key, to="human_handoff", expected_state="init")
                times[variant].append((time.perf_counter_ns() - started) / 1000)
    moves.webhook_event, moves._event_kind = shipped
    print(f"database: {connection.vendor}; {args.rounds} rounds × {args.calls} calls per variant")
    print("| variant | p50 µs | p95 µs | mean µs |")
    print("| --- | ---: | ---: | ---: |")
    stats = {}
    for variant, values in times.items():
        q = statistics.quantiles(values, n=20)
        stats[variant] = (statistics.median(values), q[18], statistics.fmean(values))
        print(f"| {variant} | {stats[variant][0]:.0f} | {stats[variant][1]:.0f} | {stats[variant][2]:.0f} |")
    print(f"shipped / without, p50: {stats['shipped'][0] / stats['without'][0]:.3f}")


if __name__ == "__main__":
    main()

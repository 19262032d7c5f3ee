"""The session guess against the plain prepared read + insert: one decide with a session it does not move.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.session_guess.run --rounds 10 --calls 200
    .venv/bin/python -m bench.session_guess.run                 # SQLite in a temporary file

Times ``decision_make`` (the service, no HTTP) for the demo's ``intent_routing`` with a session, in
alternating rounds: **guess** (``ARBITER_DECIDE_GUESS_SESSION_STATE`` on: the state this process last saw,
the read folded into the INSERT — one statement) and **read** (off: the session with its machine and
feedback read, then the INSERT — two). Per call latencies, p50 and p95, and their ratio. On SQLite the
guess is never taken (no writable CTEs): both rows are the read path, a measure of the noise.

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
    demo_database("arbiter-guess-")
    from django.conf import settings
    from django.db import connection

    from agents.runtimes.selectors import agent_principal
    from agents.runtimes.services import agent_create
    from agents.sessions.decide import decision_make
    from agents.sessions.reads import sessions_seen_forget
    from agents.sessions.services import session_create
    from rules.decisions.compute import DecideRequest
    from rules.engine import Candidate
    from rules.models import DecisionPoint

    agent, _ = agent_create(name=f"guess_{os.getpid()}", point_keys=["intent_routing"], actor=None, reason="bench")
    principal = agent_principal(agent)
    machine = DecisionPoint.objects.get(key="intent_routing").machine
    session = session_create(agent=principal, machine_key=machine or "after_sales")
    request = DecideRequest(
        point="intent_routing",
        input="where is my parcel",
        session_id=session.key,
        candidate=Candidate("general_query", 0.9, ""),
    )
    times: dict[str, list[float]] = {"guess": [], "read": []}
    for i in range(args.rounds):
        for variant in ("guess", "read") if i % 2 == 0 else ("read", "guess"):
            settings.ARBITER_DECIDE_GUESS_SESSION_STATE = variant == "guess"
            sessions_seen_forget()
            decision_make(agent=principal, request=request)  # the first decide of a round reads: seen after it
            for _ in range(args.calls):
                started = time.perf_counter_ns()
                decision_make(agent=principal, request=request)
                times[variant].append((time.perf_counter_ns() - started) / 1000)
    print(f"database: {connection.vendor}; {args.rounds} rounds × {args.calls} calls per variant")
    print("| variant | p50 µs | p95 µs | mean µs |")
    print("| --- | ---: | ---: | ---: |")
    stats = {}
    for variant, values in times.items():
        q = statistics.quantiles(values, n=20)
        stats[variant] = (statistics.median(values), q[18], statistics.fmean(values))
        print(f"| {variant} | {stats[variant][0]:.0f} | {stats[variant][1]:.0f} | {stats[variant][2]:.0f} |")
    g, r = stats["guess"], stats["read"]
    print(f"guess / read: p50 {g[0] / r[0]:.2f}, p95 {g[1] / r[1]:.2f}, mean {g[2] / r[2]:.2f}")


if __name__ == "__main__":
    main()

"""A point's ``store_raw_output`` on the decide path: a decide that sends ``candidate_raw``, switch off or on.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.raw_output.run --rounds 6 --calls 200
    .venv/bin/python -m bench.raw_output.run                 # SQLite in a temporary file

Times ``decision_make`` (the service, no HTTP) for the demo's ``intent_routing`` with a session and a raw
model output of about 300 characters, in alternating rounds: **off** (the log keeps the parsed candidate
only: the raw text is not masked nor written) and **on** (masked and written, as before the switch). The
switch adds no statement either way (``tests/agents/api/test_decide_round_trips.py`` counts them); this
measures what it costs or saves in Python and in the INSERT's size.

The machine is shared: compare the rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from bench.demo_db import demo_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    demo_database("arbiter-raw-")
    from django.db import connection

    from agents.runtimes.selectors import agent_principal
    from agents.runtimes.services import agent_create
    from agents.sessions.decide import decision_make
    from agents.sessions.services import session_create
    from rules.config.records import point_save
    from rules.decisions.compute import DecideRequest
    from rules.models import DecisionPoint

    agent, _ = agent_create(name=f"raw_{os.getpid()}", point_keys=["intent_routing"], actor=None, reason="bench")
    principal = agent_principal(agent)
    session = session_create(agent=principal, machine_key="after_sales")
    reason = "客户问耳机有几种颜色，电话 13812345678，属于一般咨询，不涉及退款或投诉。" * 3
    raw = "好的：\n```json\n" + json.dumps({"decision": "general_query", "confidence": 0.9, "reason": reason}) + "\n```"
    request = DecideRequest(point="intent_routing", input="有几种颜色", session_id=session.key, candidate_raw=raw)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for i in range(args.rounds):
        for variant in ("off", "on") if i % 2 == 0 else ("on", "off"):
            point = DecisionPoint.objects.get(key="intent_routing")
            if point.store_raw_output != (variant == "on"):
                point.store_raw_output = variant == "on"
                point_save(point=point, actor=None, reason="bench: raw output switch")
            decision_make(agent=principal, request=request)  # the new revision compiled before timing
            for _ in range(args.calls):
                started = time.perf_counter_ns()
                decision_make(agent=principal, request=request)
                times[variant].append((time.perf_counter_ns() - started) / 1000)
    print(f"database: {connection.vendor}; {args.rounds} rounds × {args.calls} calls per variant; raw {len(raw)} chars")
    print("| store_raw_output | p50 µs | p95 µs | mean µs |")
    print("| --- | ---: | ---: | ---: |")
    stats = {}
    for variant, values in times.items():
        q = statistics.quantiles(values, n=20)
        stats[variant] = (statistics.median(values), q[18], statistics.fmean(values))
        print(f"| {variant} | {stats[variant][0]:.0f} | {stats[variant][1]:.0f} | {stats[variant][2]:.0f} |")
    off, on = stats["off"], stats["on"]
    print(f"off / on: p50 {off[0] / on[0]:.2f}, p95 {off[1] / on[1]:.2f}, mean {off[2] / on[2]:.2f}")


if __name__ == "__main__":
    main()

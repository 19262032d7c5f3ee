"""What rules that read the session cost a decide: one decide with a session it does not move, per point.

    DATABASE_URL=postgres://… .venv/bin/python -m bench.session_reads.run --rounds 4 --calls 150

Times ``decision_make`` (the service, no HTTP) on the configuration of ``tests.support.session_rules``, in
alternating rounds over three points of it, each decided with the same session (which keeps growing its
log): **state_only** (its rules read the session's state alone: decided on a guess, one statement, where
PostgreSQL can), **history** (``complaint_watch``: the keyword lists of the session's 3 latest decisions,
read in the session's own statement, then the INSERT), **fields_and_history** (``address_check``: the same
and two fields). Per call p50, p95 and mean. The machine is shared: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

STATE_ONLY = """
  - key: state_only
    outcomes: [human_handoff, carry_on]
    default_outcome: carry_on
    when_no_candidate: default
    machine: address
    rules:
      - key: complaint_now
        priority: 10
        category: compliance
        outcome: human_handoff
        conditions:
          - input_contains: complaint
      - key: still_collecting
        priority: 20
        category: business
        outcome: carry_on
        conditions:
          - session_state_in: [collecting_params]
machines:"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args()
    os.environ["DJANGO_SETTINGS_MODULE"] = "decision_service.settings.test"
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tempfile.mkdtemp(prefix='arbiter-reads-')) / 'bench.sqlite3'}"
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from agents.runtimes.selectors import agent_principal
    from agents.runtimes.services import agent_create
    from agents.sessions.decide import decision_make
    from agents.sessions.services import session_create
    from rules.config.yaml_import import config_import
    from rules.decisions.compute import DecideRequest
    from tests.support.session_rules import SESSION_RULES_YAML

    call_command("migrate", verbosity=0, interactive=False)
    text = SESSION_RULES_YAML.replace("machines:", STATE_ONLY, 1)
    config_import(text=text, source="bench", actor=None, reason="bench")
    points = {"state_only": "state_only", "history": "complaint_watch", "fields_and_history": "address_check"}
    agent, _ = agent_create(name=f"reads_{os.getpid()}", point_keys=list(points.values()), actor=None, reason="bench")
    principal = agent_principal(agent)
    session = session_create(agent=principal, machine_key="address")
    times: dict[str, list[float]] = {name: [] for name in points}
    for i in range(args.rounds):
        order = list(points) if i % 2 == 0 else list(reversed(points))
        for name in order:
            request = DecideRequest(point=points[name], input="我的新地址是杭州市", session_id=session.key)
            decision_make(agent=principal, request=request)  # the first of a round: the session is seen after it
            for _ in range(args.calls):
                started = time.perf_counter_ns()
                decision_make(agent=principal, request=request)
                times[name].append((time.perf_counter_ns() - started) / 1000)
    print(f"database: {connection.vendor}; {args.rounds} rounds × {args.calls} calls per point")
    print("| point | p50 µs | p95 µs | mean µs |")
    print("| --- | ---: | ---: | ---: |")
    for name, values in times.items():
        q = statistics.quantiles(values, n=20)
        print(f"| {name} | {statistics.median(values):.0f} | {q[18]:.0f} | {statistics.fmean(values):.0f} |")


if __name__ == "__main__":
    main()

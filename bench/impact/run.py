"""Replay speed of the impact preview on the 200-rule benchmark point.

    .venv/bin/python -m bench.impact.run                 # SQLite in a temporary file, 10,000 logged decisions
    DATABASE_URL=postgres://… .venv/bin/python -m bench.impact.run --rows 10000

Logs ``--rows`` decisions of the engine benchmark's generated 200-rule point (its requests, decided under
the live configuration, stored as the decide service stores them), proposes a change (``min_confidence``
raised, so some decisions move), and times, in alternating rounds:

- **replay only** — ``reevaluate`` over rows already read (what the engine costs per logged decision);
- **preview end to end** — ``impact_compute`` as the Celery task runs it: the rows read from the database
  in chunks, decided again, compared and counted.

The target (issue #9) is 20,000 decisions per second per worker end to end. Pinned to one CPU (``--cpu``).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _django(database_url: str | None) -> None:
    if not database_url:
        path = Path(tempfile.mkdtemp(prefix="arbiter-impact-")) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.local")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _log(rows: int, snapshot: dict[str, Any], now: dt.datetime) -> int:
    from bench.engine.workload import generated_workload
    from rules.engine import compile_config, evaluate
    from rules.models import DecisionRecord

    DecisionRecord.objects.filter(point="generated_200").delete()
    workload = generated_workload(rows)
    point = compile_config(snapshot, revision=1, backend="native").point("generated_200")
    assert point is not None
    records = []
    for index, request in enumerate(workload.requests):
        created = now - dt.timedelta(seconds=index)
        decision = evaluate(point, text=request.text, candidate=request.candidate, facts=request.facts, now=created)
        candidate = request.candidate
        records.append(
            DecisionRecord(
                created_at=created,
                point="generated_200",
                agent_name="bench",
                input=request.text,
                facts=request.facts,
                candidate_decision=candidate.decision if candidate else "",
                candidate_confidence=candidate.confidence if candidate else None,
                decision=decision.decision or "",
                ruled_by=decision.ruled_by or "default",
                keyword_hits={},
                revision=1,
            )
        )
    DecisionRecord.objects.bulk_create(records, batch_size=2000)
    return len(records)


def _proposed(snapshot: dict[str, Any]) -> dict[str, Any]:
    proposed = copy.deepcopy(snapshot)
    for threshold in proposed["thresholds"]:
        if threshold["key"] == "min_confidence":
            threshold["value"] = round(float(threshold["value"]) + 0.1, 2)
    return proposed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0, help="pin to this CPU (-1: do not pin)")
    args = parser.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    _django(os.environ.get("DATABASE_URL"))

    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from bench.engine.workload import generated_point
    from rules.engine import compile_config
    from rules.services.impact import impact_compute, recent_decisions
    from rules.services.replay import reevaluate

    snapshot = generated_point().snapshot
    proposed = _proposed(snapshot)
    now = timezone.now()
    logged = _log(args.rows, snapshot, now)
    settings.ARBITER_IMPACT_DECISIONS = logged
    point = compile_config(proposed, revision=0, backend="native").point("generated_200")
    assert point is not None
    since = now - dt.timedelta(days=30)
    rows = list(recent_decisions("generated_200", limit=logged, since=since))

    replay: list[float] = []
    preview: list[float] = []
    result: dict[str, Any] = {}
    for index in range(args.rounds):
        order = ("replay", "preview") if index % 2 == 0 else ("preview", "replay")
        for which in order:
            started = time.perf_counter()
            if which == "replay":
                for row in rows:
                    reevaluate(point, row, exact=False)
                replay.append(logged / (time.perf_counter() - started))
            else:
                result = impact_compute(live_document=snapshot, proposed_document=proposed, now=now)
                preview.append(logged / (time.perf_counter() - started))
    assert result["evaluated"] == logged, result["evaluated"]

    print(f"# Impact preview replay speed ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)\n")
    print(f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"- database: {connection.vendor}; {logged:,} logged decisions of the 200-rule point")
    print(f"- proposal: min_confidence +0.1 → {result['changed']:,} of {logged:,} decisions change")
    print(f"- rounds: {args.rounds}, alternating; pinned to CPU {args.cpu}\n")
    print("| what | median decisions/s | min | max |")
    print("| --- | ---: | ---: | ---: |")
    for name, values in (("replay only (rows in memory)", replay), ("preview end to end (impact_compute)", preview)):
        print(f"| {name} | {statistics.median(values):,.0f} | {min(values):,.0f} | {max(values):,.0f} |")
    target = 20_000
    verdict = "meets" if statistics.median(preview) >= target else "misses"
    print(f"\nEnd to end {verdict} the target of {target:,} decisions/s per worker.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

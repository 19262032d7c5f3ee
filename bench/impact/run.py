"""Replay speed of the impact preview on the 200-rule benchmark point.

    .venv/bin/python -m bench.impact.run                 # SQLite in a temporary file, 10,000 logged decisions
    DATABASE_URL=postgres://… .venv/bin/python -m bench.impact.run --rows 10000

Logs ``--rows`` decisions of the engine benchmark's generated 200-rule point (its requests, decided under
the live configuration, stored as the decide service stores them), proposes a change (``min_confidence``
raised, so some decisions move), and times, in alternating rounds:

- **replay only** — ``decision_reevaluate`` over rows already read (what the engine costs per logged decision);
- **preview end to end** — ``impact_compute`` as the Celery task runs it: the rows read from the database
  in chunks, decided again, compared and counted;
- **before, end to end** — the preview as it was before its fast path (commit 7b312d5): rows read with
  ``values_list`` through the ORM's converters (JSON, timestamp, UUID per row), each decided with
  ``decision_reevaluate``. Same compile, same counting; ``--no-before`` leaves it out.

Both end-to-end variants must give the same result (the script asserts it). Two parts of the preview are
also timed alone: reading the rows (the selector and the JSON decoding) and compiling the proposal.
``--distinct N`` logs only N distinct requests, repeated: real traffic repeats short messages, and the
preview keeps the text pre-pass of up to 1,024 recent texts per point.

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


def _log(rows: int, snapshot: dict[str, Any], now: dt.datetime, distinct: int) -> int:
    from bench.engine.workload import generated_workload
    from rules.engine import compile_config, evaluate
    from rules.models import DecisionRecord

    DecisionRecord.objects.filter(point="generated_200").delete()
    workload = generated_workload(min(rows, distinct))
    point = compile_config(snapshot, revision=1, backend="native").point("generated_200")
    assert point is not None
    records = []
    for index in range(rows):
        request = workload.requests[index % len(workload.requests)]
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


def _impact_before(live: dict[str, Any], proposed: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """The preview's loop as it was at commit 7b312d5, kept here to be timed beside today's."""
    from dataclasses import dataclass

    from django.conf import settings

    from rules.decisions.replay import decision_reevaluate
    from rules.engine import compile_config
    from rules.governance.impact import MAX_EXAMPLES, impact_points_affected
    from rules.models import DecisionRecord

    fields = (
        "id",
        "created_at",
        "decision",
        "input",
        "masked",
        "masked_facts",  # not read before fact masking; the replay needs it now
        "keyword_hits",
        "facts",
        "session_state",
        "candidate_decision",
        "candidate_confidence",
        "candidate_reason",
        "candidate_invalid",
    )

    @dataclass(slots=True)
    class Row:
        id: Any
        created_at: dt.datetime
        decision: str
        input: str
        masked: dict[str, Any]
        masked_facts: dict[str, Any]
        keyword_hits: dict[str, Any]
        facts: dict[str, Any]
        session_state: str
        candidate_decision: str
        candidate_confidence: float | None
        candidate_reason: str
        candidate_invalid: bool

    compiled = compile_config(proposed, revision=0, backend=settings.ARBITER_ENGINE)
    since = now - dt.timedelta(days=settings.ARBITER_IMPACT_DAYS)
    evaluated = changed = 0
    matrix: dict[str, dict[str, int]] = {}
    examples: list[dict[str, Any]] = []
    for key in impact_points_affected(live, proposed):
        point = compiled.point(key)
        assert point is not None
        rows = (
            DecisionRecord.objects.filter(point=key, created_at__gte=since)
            .order_by("-created_at")
            .values_list(*fields)[: settings.ARBITER_IMPACT_DECISIONS]
        )
        for values in rows.iterator(chunk_size=2000):
            row = Row(*values)
            evaluated += 1
            decision = decision_reevaluate(point, row, exact=False)
            new = decision.decision or "(asks the LLM)"
            if new != row.decision:
                changed += 1
                cell = matrix.setdefault(row.decision, {})
                cell[new] = cell.get(new, 0) + 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(
                        {
                            "decision_id": str(row.id),
                            "point": key,
                            "input": row.input,
                            "created_at": row.created_at.isoformat().replace("+00:00", "Z"),
                            "old": row.decision,
                            "new": new,
                            "rule": decision.rule.key if decision.rule else None,
                            "ruled_by": decision.ruled_by,
                        }
                    )
    return {"evaluated": evaluated, "changed": changed, "matrix": matrix, "examples": examples}


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
    parser.add_argument(
        "--distinct", type=int, default=0, help="log only this many distinct requests, repeated (0: all distinct)"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="forget shared keyword scanners before each timed call (a worker's first preview of these lists)",
    )
    parser.add_argument("--no-before", action="store_true", help="do not time the preview as it was before")
    args = parser.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    _django(os.environ.get("DATABASE_URL"))

    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from bench.engine.workload import generated_point
    from rules.decisions.replay import decision_reevaluate
    from rules.engine import compile_config
    from rules.engine.compiler import keyword_scanner
    from rules.governance.impact import impact_compute
    from rules.models import DecisionRecord

    snapshot = generated_point().snapshot
    proposed = _proposed(snapshot)
    now = timezone.now()
    logged = _log(args.rows, snapshot, now, args.distinct or args.rows)
    settings.ARBITER_IMPACT_DECISIONS = logged
    point = compile_config(proposed, revision=0, backend="native").point("generated_200")
    assert point is not None
    since = now - dt.timedelta(days=30)
    rows = list(DecisionRecord.objects.filter(point="generated_200", created_at__gte=since).order_by("-created_at"))

    from rules.decisions.selectors import decision_log_rows
    from rules.governance.impact import _COLUMNS, row_json

    def read_only() -> None:  # the preview's read of the rows, without deciding them
        for row in decision_log_rows(point="generated_200", since=since, limit=logged, columns=_COLUMNS):
            row_json(row[3]), row_json(row[5])  # masked, facts (keyword_hits only for masked rows)

    timings: dict[str, list[float]] = {"replay": [], "preview": [], "before": [], "read": [], "compile": []}
    cpu: dict[str, list[float]] = {k: [] for k in timings}
    variants = ["replay", "preview", "read", "compile"] + ([] if args.no_before else ["before"])
    result: dict[str, Any] = {}
    before: dict[str, Any] = {}
    for index in range(args.rounds):
        shift = index % len(variants)
        for which in variants[shift:] + variants[:shift]:  # each variant goes first in turn
            if args.cold:
                keyword_scanner.cache_clear()
            started, started_cpu = time.perf_counter(), time.process_time()
            if which == "read":
                read_only()
            elif which == "compile":
                compile_config(proposed, revision=0, backend=settings.ARBITER_ENGINE)
            elif which == "replay":
                for row in rows:
                    decision_reevaluate(point, row, exact=False)
            elif which == "preview":
                result = impact_compute(live_document=snapshot, proposed_document=proposed, now=now)
            else:
                before = _impact_before(snapshot, proposed, now)
            timings[which].append(logged / (time.perf_counter() - started))
            cpu[which].append(logged / max(time.process_time() - started_cpu, 1e-9))
    assert result["evaluated"] == logged, result["evaluated"]
    if before:
        same = {k: result[k] for k in before}
        assert same == before, "the preview and the preview as it was before disagree"

    print(f"# Impact preview replay speed ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)\n")
    print(f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    distinct = args.distinct or args.rows
    print(f"- database: {connection.vendor}; {logged:,} logged decisions of the 200-rule point ({distinct:,} distinct)")
    print(f"- proposal: min_confidence +0.1 → {result['changed']:,} of {logged:,} decisions change")
    print(f"- rounds: {args.rounds}, alternating; pinned to CPU {args.cpu}")
    shared = "forgotten before each timed call (--cold)" if args.cold else "shared across calls, as in a warm worker"
    print(f"- keyword scanners: {shared}\n")
    print("Wall clock, and this process's CPU time (PostgreSQL's own work runs in its own process: not in the")
    print("CPU column). µs per decision: the median wall figure as time per logged decision.\n")
    print("| what | median decisions/s | min | max | median per CPU-second | µs per decision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    names = {
        "preview": "preview end to end (impact_compute)",
        "before": "before: end to end as at 7b312d5",
        "replay": "replay only (model instances in memory, `decision_reevaluate`)",
        "read": "part: reading the rows (selector + JSON)",
        "compile": "part: compiling the proposal (once per preview)",
    }
    for which in names:
        values = timings[which]
        if values:
            median = statistics.median(values)
            print(
                f"| {names[which]} | {median:,.0f} | {min(values):,.0f} | {max(values):,.0f} "
                f"| {statistics.median(cpu[which]):,.0f} | {1e6 / median:.1f} |"
            )
    if timings["before"]:
        ratios = [a / b for a, b in zip(timings["preview"], timings["before"], strict=True)]
        cpu_ratios = [a / b for a, b in zip(cpu["preview"], cpu["before"], strict=True)]
        print(f"\nEnd to end, today / before, round by round: {', '.join(f'{r:.2f}x' for r in ratios)}")
        print(f"(CPU time: {', '.join(f'{r:.2f}x' for r in cpu_ratios)}).")
        print("Both gave the same evaluated, changed, matrix and examples.")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        print(f"Load average at the end (1/5/15 min): {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.")
    preview = timings["preview"]
    target = 20_000
    verdict = "meets" if statistics.median(preview) >= target else "misses"
    print(f"\nEnd to end {verdict} the target of {target:,} decisions/s per worker.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

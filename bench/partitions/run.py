"""Insert throughput of the partitioned decision log: empty versus holding 10 million rows (issue #12).

    DATABASE_URL=postgres://… .venv/bin/python -m bench.partitions.run              # 10,000,000 rows
    DATABASE_URL=postgres://… .venv/bin/python -m bench.partitions.run --rows 200000 --rounds 4  # quick

PostgreSQL only. Two schemas of the benchmark database hold a copy of the log's structure as migration
0015 leaves it (partitioned by month, primary key (id, created_at), every index of
``public.rules_decisionrecord``, a DEFAULT partition): ``bench_empty`` stays empty, ``bench_full`` is
filled with ``--rows`` rows spread over 180 days (the default retention) ending with this month, so this
month's partition — the one inserts go to — holds a full month's share, as on a month's last day. The
load is one INSERT … SELECT per million rows, indexes built afterwards; ``--keep`` keeps the schemas for
the next run.

Then, in alternating rounds (so that load from other work on the machine falls on both alike), the same
``--inserts`` decisions are written into each schema by ``decision_record_insert`` — the decide path's
single-row INSERT in autocommit — once with ``synchronous_commit`` on (what production does: each insert
waits for its WAL flush) and once with it off (so index maintenance, not the flush, dominates).
The report gives inserts per second per round and the median ratio full / empty.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
import uuid
from typing import Any

SCHEMAS = ("bench_empty", "bench_full")
TABLE = "rules_decisionrecord"
MONTHS_BACK = 6  # 180 days of rows, plus this month and two ahead


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.local")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("bench.partitions needs PostgreSQL: set DATABASE_URL=postgres://…")
    call_command("migrate", verbosity=0, interactive=False)


def _months(now: dt.datetime) -> list[dt.datetime]:
    from rules.decisions.partitions import MONTHS_AHEAD, month_start, next_month

    start = month_start(now - dt.timedelta(days=31 * MONTHS_BACK))
    out = [start]
    while out[-1] < month_start(now) or len(out) < MONTHS_BACK + 1 + MONTHS_AHEAD:
        out.append(next_month(out[-1]))
    return out


def _create(cursor: Any, schema: str, now: dt.datetime) -> None:
    from rules.decisions.partitions import next_month

    cursor.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    cursor.execute(f"CREATE SCHEMA {schema}")
    cursor.execute(
        f"CREATE TABLE {schema}.{TABLE} (LIKE public.{TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
        "PARTITION BY RANGE (created_at)"
    )
    cursor.execute(f"CREATE TABLE {schema}.{TABLE}_default PARTITION OF {schema}.{TABLE} DEFAULT")
    for start in _months(now):
        cursor.execute(
            f"CREATE TABLE {schema}.{TABLE}_p{start:%Y_%m} PARTITION OF {schema}.{TABLE} "
            f"FOR VALUES FROM ('{start:%Y-%m-%d}+00') TO ('{next_month(start):%Y-%m-%d}+00')"
        )


def _index(cursor: Any, schema: str) -> None:
    cursor.execute(f"ALTER TABLE {schema}.{TABLE} ADD PRIMARY KEY (id, created_at)")
    cursor.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s AND indexname <> %s",
        [TABLE, f"{TABLE}_pkey"],
    )
    for (definition,) in cursor.fetchall():
        cursor.execute(definition.replace(f"ON ONLY public.{TABLE}", f"ON {schema}.{TABLE}"))
    cursor.execute(f"ANALYZE {schema}.{TABLE}")


FILL = """
INSERT INTO bench_full.rules_decisionrecord (
    id, created_at, point, agent_id, agent_name, session_id, input, masked, facts, session_state,
    candidate_decision, candidate_confidence, candidate_reason, candidate_raw, decision, ruled_by, rule_key,
    rule_priority, rule_category, matched_rules, keyword_hits, overridden, reason, revision, engine,
    evaluated_us, tokens_prompt, tokens_completion, idempotency_key, request_digest, session_move,
    candidate_invalid, masked_facts, session_read, llm_model, llm_prompt_version)
SELECT gen_random_uuid(), %(end)s - random() * interval '180 days',
    (ARRAY['intent_routing', 'refund_approval', 'change_address', 'order_status'])[1 + i %% 4],
    1 + i %% 20, 'bot_' || (i %% 20), 's' || (i %% 200000),
    'customer message ' || md5(i::text) || ' where is my parcel', '{}'::jsonb,
    jsonb_build_object('refund_amount', i %% 1000), '',
    'general_query', 0.9, '', '', (ARRAY['general_query', 'human_handoff', 'auto_approve'])[1 + i %% 3],
    (ARRAY['hard_rule', 'llm_candidate', 'default'])[1 + i %% 3], 'rule_' || (i %% 50), i %% 1000, 'enforce',
    jsonb_build_array(jsonb_build_object('key', 'rule_' || (i %% 50), 'priority', i %% 1000,
        'category', 'enforce', 'outcome', 'general_query', 'shadow', false)),
    '{}'::jsonb, false, 'candidate general_query accepted (confidence 0.90)', 1, 'native', 40 + i %% 60,
    NULL, NULL, '', md5((i * 7)::text) || md5(i::text), NULL, false, '{}'::jsonb, '{}'::jsonb,
    (ARRAY['model-a', 'model-b'])[1 + i %% 2], 'prompt-1'
FROM generate_series(%(first)s, %(last)s) AS i
"""


def _fill(rows: int, now: dt.datetime, keep: bool) -> None:
    from django.db import connection

    from rules.decisions.partitions import month_start, next_month

    with connection.cursor() as cursor:
        if keep and _schema_exists(cursor, "bench_full") and _schema_exists(cursor, "bench_empty"):
            cursor.execute(f"SELECT count(*) FROM bench_full.{TABLE}")  # noqa: S608
            if cursor.fetchone()[0] >= rows:
                cursor.execute(f"TRUNCATE bench_empty.{TABLE}")
                print(f"kept bench_full from an earlier run (at least {rows:,} rows)", flush=True)
                return
        for schema in SCHEMAS:
            _create(cursor, schema, now)
        # The 180 days end with this month, so its partition holds a full month's share of the rows (as on
        # the last day of a month), however early in the month the benchmark runs.
        end = next_month(month_start(now))
        cursor.execute("SET maintenance_work_mem TO '256MB'")
        started = time.perf_counter()
        step = 1_000_000
        for first in range(1, rows + 1, step):
            last = min(first + step - 1, rows)
            cursor.execute(FILL, {"end": end, "first": first, "last": last})
            print(f"  loaded {last:,} rows ({time.perf_counter() - started:.0f} s)", flush=True)
        for schema in SCHEMAS:
            _index(cursor, schema)
        print(f"  indexed ({time.perf_counter() - started:.0f} s)", flush=True)


def _schema_exists(cursor: Any, schema: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema])
    return cursor.fetchone() is not None


def _records(n: int, offset: int) -> list[Any]:
    from django.utils import timezone

    from rules.models import DecisionRecord

    now = timezone.now()
    return [
        DecisionRecord(
            id=uuid.uuid4(),
            created_at=now,
            point="intent_routing",
            agent_id=1,
            agent_name="bot_1",
            session_id=f"bench-{offset + i}",
            input="customer message: where is my parcel, order 12345",
            facts={"refund_amount": i % 1000},
            candidate_decision="general_query",
            candidate_confidence=0.9,
            decision="general_query",
            ruled_by="llm_candidate",
            matched_rules=[],
            reason="no rule decided; candidate general_query accepted (confidence 0.90)",
            revision=1,
            evaluated_us=45,
            request_digest="d" * 64,
        )
        for i in range(n)
    ]


def _round(schema: str, inserts: int, offset: int, synchronous: bool) -> float:
    from django.db import connection

    from rules.decisions.decide import decision_record_insert

    records = _records(inserts, offset)
    with connection.cursor() as cursor:
        cursor.execute(f"SET search_path TO {schema}, public")
        cursor.execute(f"SET synchronous_commit TO {'on' if synchronous else 'off'}")
    started = time.perf_counter()
    for record in records:
        decision_record_insert(record=record)
    elapsed = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SET search_path TO public")
        cursor.execute("RESET synchronous_commit")
    return inserts / elapsed


def _counts() -> dict[str, tuple[int, int]]:
    """Rows in the whole log and in this month's partition, per schema."""
    from django.db import connection
    from django.utils import timezone

    out = {}
    with connection.cursor() as cursor:
        for schema in SCHEMAS:
            cursor.execute(f"SELECT count(*) FROM {schema}.{TABLE}")  # noqa: S608
            total = cursor.fetchone()[0]
            cursor.execute(f"SELECT count(*) FROM {schema}.{TABLE}_p{timezone.now():%Y_%m}")  # noqa: S608
            out[schema] = (total, cursor.fetchone()[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--inserts", type=int, default=2000, help="single-row inserts per round")
    parser.add_argument("--rounds", type=int, default=8, help="rounds per schema and commit mode")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the bench schemas")
    args = parser.parse_args()
    _django()
    from django.db import connection
    from django.utils import timezone

    print(f"# partitioned log insert benchmark: {args.rows:,} rows, {args.inserts} inserts x {args.rounds} rounds")
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs", flush=True)
    started = time.perf_counter()
    _fill(args.rows, timezone.now(), args.keep)
    fill_seconds = time.perf_counter() - started
    counts = _counts()
    rates: dict[tuple[str, bool], list[float]] = {(s, sync): [] for s in SCHEMAS for sync in (True, False)}
    offset = 0
    for r in range(args.rounds):
        for synchronous in (True, False):
            order = SCHEMAS if r % 2 == 0 else SCHEMAS[::-1]
            for schema in order:
                rates[(schema, synchronous)].append(_round(schema, args.inserts, offset, synchronous))
                offset += args.inserts
        print(f"  round {r + 1}/{args.rounds} done", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0].split(" on ")[0]
    print()
    print(f"{version}; load {os.getloadavg()[0]:.1f} (1-min average) at the end; fill + index {fill_seconds:.0f} s")
    for schema, (total, month) in counts.items():
        print(f"- {schema}: {total:,} rows before the rounds, {month:,} of them in this month's partition")
    print()
    print("| commit | log | inserts/s per round | median | full / empty: median (per round) |")
    print("|---|---|---|---|---|")
    for synchronous in (True, False):
        empty, full = rates[("bench_empty", synchronous)], rates[("bench_full", synchronous)]
        ratios = [f / e for f, e in zip(full, empty, strict=True)]
        mode = "synchronous_commit on" if synchronous else "synchronous_commit off"
        for schema, values in (("empty", empty), (f"{args.rows:,} rows", full)):
            cells = ", ".join(f"{v:,.0f}" for v in values)
            ratio = (
                f"**{statistics.median(ratios):.3f}** ({', '.join(f'{r:.2f}' for r in ratios)})"
                if schema != "empty"
                else ""
            )
            print(f"| {mode} | {schema} | {cells} | {statistics.median(values):,.0f} | {ratio} |")
    if not args.keep:
        with connection.cursor() as cursor:
            for schema in SCHEMAS:
                cursor.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()

"""A realistic decision log for benchmarks (``manage.py generate_decisions``): never for production data.

Rows follow the loaded configuration: each point's outcomes, whitelist, default and rules (an
enforcing rule decides with its outcome; shadow rules show up in ``matched_rules``), candidates with
confidences and token counts, overridden candidates, LLM calls avoided, invalid model output with its
anomaly, and "ask your LLM" counters. Times spread evenly over the last ``days`` days. On PostgreSQL rows
go in with ``COPY``; elsewhere with ``bulk_create`` in batches. It lives in ``agents`` because it writes
anomalies too, and ``rules`` does not know them.

The rollups of the days written to are dropped (the report counts those days directly until the next
refresh or ``manage.py decision_rollups`` rebuilds them), so a generated log is never hidden behind an
older rollup.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection, models, transaction
from django.db.models import F
from django.utils import timezone

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly
from decision_service.sequence import SequenceIdField
from rules.config.selectors import config_document, revision_latest
from rules.models import CandidateRequestCount, DecisionRecord
from rules.reports.rollups import decision_rollups_forget_between

BATCH = 10_000
GENERATED_AGENT = "generated_load"
_INPUTS = ("我想退货", "where is my parcel", "订单 [ORDER] 什么时候到", "I want a refund", "你好", "投诉你们")


@dataclass(frozen=True)
class Generated:
    decisions: int
    anomalies: int
    needs_candidate: int
    start: dt.datetime
    end: dt.datetime


def _agent() -> AgentRuntime:
    agent = AgentRuntime.objects.filter(name=GENERATED_AGENT).first()
    if agent is None:
        from agents.runtimes.services import agent_create

        agent, _ = agent_create(
            name=GENERATED_AGENT,
            point_keys=[p["key"] for p in config_document()["points"]],
            actor=None,
            reason="manage.py generate_decisions: a synthetic log for benchmarks",
            is_active=False,
        )
    return agent


def _row(
    rng: random.Random, point: Mapping[str, Any], at: dt.datetime, agent: AgentRuntime, revision: int
) -> dict[str, Any]:
    outcomes = list(point.get("outcomes") or [point.get("default_outcome", "")])
    whitelist = list(point.get("candidate_whitelist") or [])
    rules = [r for r in point.get("rules", []) if r.get("mode", "enforce") == "enforce"]
    shadows = [r for r in point.get("rules", []) if r.get("mode") == "shadow"]
    default = point.get("default_outcome", outcomes[0])
    roll = rng.random()
    candidate = confidence = None
    raw = ""
    invalid = False
    if roll < 0.08:
        pass  # decided before any candidate was asked for
    elif roll < 0.10:
        raw, invalid = "Sure! I think the answer is", True
    else:
        candidate = rng.choice(whitelist or outcomes)
        confidence = round(rng.betavariate(5, 2), 3)
    matched = []
    if rules and ((candidate is None and not invalid) or rng.random() < 0.3):
        rule = rng.choice(rules)
        decision, ruled_by = rule["outcome"], "hard_rule"
        matched.append(rule)
    elif candidate is not None and candidate in whitelist and (confidence or 0) >= 0.4:
        decision, ruled_by, rule = candidate, "llm_candidate", None
    else:
        decision, ruled_by, rule = default, "default", None
    if shadows and rng.random() < 0.2:
        matched.append(rng.choice(shadows))
    with_tokens = candidate is not None or invalid
    return {
        "id": uuid.UUID(int=rng.getrandbits(128), version=4),
        "created_at": at,
        "point": point["key"],
        "agent_id": agent.pk,
        "agent_name": agent.name,
        "session_id": f"gen-{rng.randrange(1_000_000)}",
        "input": rng.choice(_INPUTS),
        "masked": {},
        "masked_facts": {},
        "facts": {},
        "session_state": "",
        "candidate_decision": candidate or "",
        "candidate_confidence": confidence,
        "candidate_reason": "",
        "candidate_raw": raw,
        "decision": decision,
        "ruled_by": ruled_by,
        "rule_key": rule["key"] if rule else "",
        "rule_priority": rule["priority"] if rule else None,
        "rule_category": rule["category"] if rule else "",
        "matched_rules": [
            {
                "key": r["key"],
                "priority": r["priority"],
                "category": r["category"],
                "outcome": r["outcome"],
                "shadow": r.get("mode") == "shadow",
            }
            for r in matched
        ],
        "keyword_hits": {},
        "overridden": candidate is not None and decision != candidate,
        "reason": "generated",
        "revision": revision,
        "engine": "native",
        "evaluated_us": rng.randrange(5, 80),
        "tokens_prompt": rng.randrange(200, 900) if with_tokens else None,
        "tokens_completion": rng.randrange(10, 80) if with_tokens else None,
        "idempotency_key": "",
        "request_digest": "",
        "session_move": None,
        "candidate_invalid": invalid,
        "session_read": {},  # the generated points read nothing of a session beyond its state
        # Which model made the candidate (decide's ``llm``): two, so the map's breakdown by model has rows.
        "llm_model": rng.choice(("demo-model-a", "demo-model-b")) if candidate is not None else "",
        "llm_prompt_version": "demo-prompt-1" if candidate is not None else "",
        "llm_latency_ms": rng.randrange(300, 2500) if candidate is not None else None,
    }


def _rows(count: int, days: int, now: dt.datetime, seed: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)  # noqa: S311 - synthetic benchmark data, not secrets
    points = config_document()["points"]
    if not points:
        raise ValueError("No decision points are configured: load a configuration first (e.g. bin/demo).")
    agent = _agent()
    latest = revision_latest()
    revision = latest.number if latest is not None else 1
    span = days * 86_400_000_000
    for _ in range(count):
        at = now - dt.timedelta(microseconds=rng.randrange(span))
        yield _row(rng, rng.choice(points), at, agent, revision)


def _copy(model: Any, columns: list[str], rows: list[list[Any]]) -> None:
    table = model._meta.db_table
    names = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


# COPY takes JSON as text; every JSON column of the log, so that a new one is not missed.
_JSON = {f.attname for f in DecisionRecord._meta.concrete_fields if isinstance(f, models.JSONField)}


def _write(batch: list[dict[str, Any]]) -> None:
    if connection.vendor == "postgresql":
        # The sequence id is the database's to fill (decision_service.sequence).
        written = [f for f in DecisionRecord._meta.concrete_fields if not isinstance(f, SequenceIdField)]
        columns = [f.column for f in written]
        attnames = [f.attname for f in written]
        _copy(
            DecisionRecord,
            columns,
            [[json.dumps(r[a]) if a in _JSON and r[a] is not None else r[a] for a in attnames] for r in batch],
        )
    else:
        DecisionRecord.objects.bulk_create([DecisionRecord(**r) for r in batch])


def _anomalies(found: list[tuple[dt.datetime, dict[str, Any]]], agent_id: int) -> None:
    if not found:
        return
    if connection.vendor == "postgresql":
        _copy(
            Anomaly,
            ["created_at", "agent_id", "session_id", "point", "code", "detail", "raw", "decision_id"],
            [
                [
                    at,
                    agent_id,
                    r["session_id"],
                    r["point"],
                    "invalid_candidate_output",
                    "generated",
                    r["candidate_raw"],
                    r["id"],
                ]
                for at, r in found
            ],
        )
        return
    for at, r in found:
        anomaly = Anomaly.objects.create(
            agent_id=agent_id,
            session_id=r["session_id"],
            point=r["point"],
            code="invalid_candidate_output",
            detail="generated",
            raw=r["candidate_raw"],
            decision_id=r["id"],
        )
        Anomaly.objects.filter(pk=anomaly.pk).update(created_at=at)  # auto_now_add would say "now"


def decisions_generate(*, count: int, days: int, now: dt.datetime | None = None, seed: int = 11) -> Generated:
    """Write ``count`` synthetic decisions spread over the last ``days`` days up to ``now``, with their
    anomalies and "ask your LLM" counters, in batches of ``BATCH`` (one transaction each)."""
    if count < 0 or days < 1:
        raise ValueError("count must be at least 0 and days at least 1")
    now = now or timezone.now()
    agent = _agent()
    needs: Counter[tuple[str, dt.date]] = Counter()
    rng = random.Random(seed + 1)  # noqa: S311
    anomalies = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal anomalies
        with transaction.atomic():
            _write(batch)
            found = [(r["created_at"], r) for r in batch if r["candidate_invalid"]]
            _anomalies(found, agent.pk)
        anomalies += len(found)
        batch.clear()

    for row in _rows(count, days, now, seed):
        batch.append(row)
        if rng.random() < 0.1:
            needs[(row["point"], row["created_at"].astimezone(dt.UTC).date())] += 1
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    with transaction.atomic():
        for (point, day), n in needs.items():
            counter, created = CandidateRequestCount.objects.get_or_create(
                point=point, agent_id=agent.pk, day=day, defaults={"agent_name": agent.name, "count": n}
            )
            if not created:
                CandidateRequestCount.objects.filter(pk=counter.pk).update(count=F("count") + n)
    start = now - dt.timedelta(days=days)
    decision_rollups_forget_between(start, now)
    return Generated(decisions=count, anomalies=anomalies, needs_candidate=sum(needs.values()), start=start, end=now)

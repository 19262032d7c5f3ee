"""Reads of the decision log: one agent's logged decisions, an idempotency key's decision, and the log
read fast (as tuples) for the impact preview."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from django.db import connections
from django.db.models.sql.constants import MULTI

from rules.errors import IdempotencyConflict, NotFound
from rules.models import DecisionIdempotencyKey, DecisionRecord

# The decision log's admin filters by the model and prompt version that made the candidate (query
# parameters named as the columns); UNKNOWN_LLM selects the decisions whose agent named none, as the
# map's "unknown" row counts them, so each row of the map links to its decisions.
LLM_MODEL_PARAM = "llm_model"
LLM_PROMPT_PARAM = "llm_prompt_version"
UNKNOWN_LLM = "(unknown)"


def decision_llm_names(*, column: str, recent: int = 2000) -> list[str]:
    """The values of ``column`` (``llm_model`` or ``llm_prompt_version``) among the latest ``recent``
    decisions: a bounded read of the time index, not a DISTINCT over the whole log."""
    latest = DecisionRecord.objects.order_by("-created_at").values_list(column, flat=True)[:recent]
    return sorted({name for name in latest if name})


def decision_get_for_agent(*, agent_id: int, decision_id: str) -> DecisionRecord:
    """A logged decision made by this agent; ``NotFound`` for any other id, malformed ones included."""
    try:
        pk = uuid.UUID(decision_id)
    except ValueError as exc:
        raise NotFound("No decision with that id was made by this agent.") from exc
    record = DecisionRecord.objects.filter(pk=pk, agent_id=agent_id).first()
    if record is None:
        raise NotFound("No decision with that id was made by this agent.")
    return record


def decision_get_by_idempotency_key(*, agent_id: int, key: str, digest: str) -> DecisionRecord | None:
    """The decision this agent already logged under ``key``; the key with another body is refused."""
    # One query: the key's own table (unique per agent, shared by every write of the agent API) joined to
    # the log row it names, if it names one: a key a session write holds names none, and is refused.
    found = DecisionIdempotencyKey.objects.select_related("decision").filter(agent_id=agent_id, key=key).first()
    if found is None:
        return None
    record = found.decision if found.decision_id is not None else None
    if record is None or record.request_digest != digest:
        raise IdempotencyConflict(
            f"Idempotency-Key '{key}' was already used with a different request body.",
        )
    return record


def decision_log_rows(
    *,
    point: str,
    since: dt.datetime,
    limit: int,
    columns: Sequence[str],
    converted: Collection[str] = (),
    chunk_size: int = 2000,
) -> Iterator[tuple[Any, ...]]:
    """The ``limit`` most recent logged decisions of ``point`` since ``since``, newest first, as tuples of
    ``columns`` — for reading many rows fast (the impact preview). Rows are streamed in chunks (a server-side
    cursor on PostgreSQL) and come as the database driver gives them: no model instances and none of the ORM's
    per-row converters, except for the columns in ``converted``. So JSON columns come as their JSON text
    (Django has psycopg hand jsonb over as text; SQLite stores text: decode it yourself, once, with what you
    like), booleans may be 0/1, ids and timestamps are raw; ``decision_log_row_ids`` turns raw ids into the
    ORM's, for the few rows that need them."""
    # The SQL is the ORM's (table, quoting, whatever the model's storage becomes); only the execution is done
    # by hand, with the compiler calls QuerySet.iterator() itself makes, less its converters.
    queryset = (
        DecisionRecord.objects.filter(point=point, created_at__gte=since)
        .order_by("-created_at")
        .values_list(*columns)[:limit]
    )
    compiler = queryset.query.get_compiler(using=queryset.db)
    chunked = not connections[queryset.db].settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")  # as iterator() does
    chunks = compiler.execute_sql(MULTI, chunked_fetch=chunked, chunk_size=chunk_size)
    if chunks is None:  # only for other result types than MULTI; for the type checker
        return
    positions = [columns.index(c) for c in converted]
    converters = compiler.get_converters([compiler.select[p][0] for p in positions])
    if not converters:
        for chunk in chunks:
            yield from chunk
        return
    connection = connections[queryset.db]
    for chunk in chunks:
        for raw in chunk:
            row = list(raw)
            for i, (functions, expression) in converters.items():
                value = row[positions[i]]
                for function in functions:
                    value = function(value, expression, connection)
                row[positions[i]] = value
            yield tuple(row)


def decision_log_row_ids(raw_ids: Iterable[Any]) -> dict[Any, tuple[str, dt.datetime | None]]:
    """Raw ids read by ``decision_log_rows`` → (the decision's id as text, when it was logged); the time is
    None for a row no longer in the log (deleted since it was read)."""
    field = DecisionRecord._meta.pk
    assert field is not None
    by_id = {field.to_python(raw): raw for raw in raw_ids}
    logged = dict(DecisionRecord.objects.filter(pk__in=list(by_id)).values_list("pk", "created_at"))
    return {raw: (str(pk), logged.get(pk)) for pk, raw in by_id.items()}

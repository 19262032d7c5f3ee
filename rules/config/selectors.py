"""Reads of configuration. ``config_document`` is the one canonical shape of the whole configuration:

it is what a revision snapshots, what ``export_config`` writes as YAML and what ``import_config``
compares a file against. Keeping one shape means export → import → export cannot drift.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from django.db import connections
from django.db.models.sql.constants import MULTI

from rules.config.condition_kinds import adapter
from rules.config.document.spelling import CONFIG_FORMAT_VERSION, datetime_out, drop_empty, number_out
from rules.engine import CompiledPoint
from rules.engine.evasion import EVASION_OPTIONS
from rules.errors import IdempotencyConflict, NotFound
from rules.models import (
    OPEN_STATES,
    ChangeRequest,
    ChangeRequestState,
    Condition,
    ConfigRevision,
    DecisionPoint,
    DecisionRecord,
    KeywordList,
    Rule,
    StaffToken,
    StateMachine,
    Threshold,
)


def _by_key(records: Iterable[Any]) -> list[Any]:
    # Sorted in Python, not by the database: collations differ (underscores sort differently under a
    # PostgreSQL locale than under SQLite), and the snapshot digest must not depend on the database.
    return sorted(records, key=lambda r: r.key)


def condition_document(c: Condition) -> dict[str, Any]:
    kind = adapter(c.kind)
    if kind is None:
        raise ValueError(f"unknown condition kind {c.kind!r}")
    return kind.document(c)


def config_document() -> dict[str, Any]:
    """The whole live configuration as plain, JSON- and YAML-safe data in a deterministic order."""
    return {
        "version": CONFIG_FORMAT_VERSION,
        "thresholds": [_threshold_document(t) for t in _by_key(Threshold.objects.all())],
        "keyword_lists": [_keyword_list_document(kl) for kl in _by_key(KeywordList.objects.prefetch_related("terms"))],
        "points": [_point_document(p) for p in _by_key(DecisionPoint.objects.all())],
        "machines": [_machine_document(m) for m in _by_key(StateMachine.objects.all())],
    }


def _threshold_document(t: Threshold) -> dict[str, Any]:
    return drop_empty(
        {
            "key": t.key,
            "name": t.name,
            "description": t.description,
            "value": number_out(t.value),
            "unit": t.unit,
            "min": number_out(t.min_value),
            "max": number_out(t.max_value),
            "high_risk": t.high_risk,
        },
        "name",
        "description",
        "unit",
        "min",
        "max",
    )


def _keyword_list_document(kl: KeywordList) -> dict[str, Any]:
    return drop_empty(
        {
            "key": kl.key,
            "name": kl.name,
            "description": kl.description,
            "match": kl.match_mode,
            # Always written, false too: their presence marks a revision whose keyword matching ignores
            # format characters (rules.engine.compiler.keyword_list_spec).
            "fold_traditional": kl.fold_traditional,
            "ignore_cjk_gaps": kl.ignore_cjk_gaps,
            # Always written too: a revision without them is one from before they existed (rules 0019).
            **{option: getattr(kl, option) for option in EVASION_OPTIONS},
            "terms": [term.term for term in kl.terms.order_by("id")],
        },
        "name",
        "description",
    )


def _rule_document(r: Rule) -> dict[str, Any]:
    conditions = [
        condition_document(c)
        for c in r.conditions.select_related("keyword_list", "threshold").order_by("position", "id")
    ]
    return drop_empty(
        {
            "key": r.key,
            "description": r.description,
            "priority": r.priority,
            "category": r.category,
            "match": r.combinator,
            "mode": r.mode,
            "outcome": r.outcome,
            "effective_from": datetime_out(r.effective_from),
            "effective_until": datetime_out(r.effective_until),
            "conditions": conditions,
        },
        "description",
        "effective_from",
        "effective_until",
    )


def _point_document(p: DecisionPoint) -> dict[str, Any]:
    rules = [_rule_document(r) for r in sorted(p.rules.all(), key=lambda r: (r.priority, r.key))]
    return drop_empty(
        {
            "key": p.key,
            "name": p.name,
            "description": p.description,
            "facts": dict(p.facts),
            "outcomes": list(p.outcomes),
            "candidate_whitelist": list(p.candidate_whitelist),
            "default_outcome": p.default_outcome,
            "when_no_candidate": p.no_candidate,
            "machine": p.machine,
            "state_map": dict(p.state_map),
            "fallback_state": p.fallback_state,
            "mask_skip": list(p.mask_skip),
            "mask_patterns": dict(p.mask_patterns),
            "mask_fact_paths": list(p.mask_fact_paths),
            # Written only when a point opts out, so documents from before rules 0014 read the same.
            **({} if p.mask_facts else {"mask_facts": False}),
            "rules": rules,
        },
        "name",
        "description",
        "facts",
        "machine",
        "state_map",
        "fallback_state",
        "mask_skip",
        "mask_patterns",
        "mask_fact_paths",
    )


def _machine_document(m: StateMachine) -> dict[str, Any]:
    return drop_empty(
        {
            "key": m.key,
            "name": m.name,
            "description": m.description,
            "states": list(m.states),
            "initial": m.initial_state,
            "handoff": m.handoff_state,
            "terminal": list(m.terminal_states),
            "transitions": {s: list(m.transitions.get(s, [])) for s in m.states if m.transitions.get(s)},
            "actions": {s: list(m.actions[s]) for s in m.states if s in m.actions},
            "timeouts": {s: m.timeouts[s] for s in m.states if s in m.timeouts},
            "max_anomalies": m.max_anomalies,
        },
        "name",
        "description",
        "actions",
        "timeouts",
    )


def revision_latest() -> ConfigRevision | None:
    return ConfigRevision.objects.order_by("-number").first()


def revision_get(*, number: int) -> ConfigRevision | None:
    return ConfigRevision.objects.filter(number=number).first()


def points_for_agent(*, allowed: frozenset[str]) -> tuple[list[CompiledPoint], int]:
    """The compiled points of the current revision among ``allowed`` (an agent's scope), by key."""
    from rules.config.runtime import engines  # the runtime imports models; keep selectors importable without it

    config = engines.current()
    return [config.points[k] for k in sorted(config.points) if k in allowed], config.revision


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
    # One query: the key's own table (unique per agent) joined to the log row it names.
    record = DecisionRecord.objects.filter(idempotency__agent_id=agent_id, idempotency__key=key).first()
    if record is not None and record.request_digest != digest:
        raise IdempotencyConflict(
            f"Idempotency-Key '{key}' was already used with a different request body.",
        )
    return record


def staff_user_by_token(*, token: str) -> Any:
    """The active staff user whose API token this is, or None."""
    from decision_service.tokens import token_hash

    found = StaffToken.objects.select_related("user").filter(token_hash=token_hash(token)).first()
    if found is None or not found.user.is_active or not found.user.is_staff:
        return None
    return found.user


def change_requests_touching(*, kind: str, key: str, point: str = "") -> list[ChangeRequest]:
    """Open change requests that would change this record."""
    return [
        request
        for request in ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk")
        if any(c["kind"] == kind and c["key"] == key and (c.get("point") or "") == point for c in request.changes)
    ]


def change_requests_waiting_for(*, user: Any) -> Any:
    """Pending requests this user could approve and has not: not their own, not approved by them yet."""
    if not (user.is_active and user.has_perm("rules.approve_changerequest")):
        return ChangeRequest.objects.none()
    return (
        ChangeRequest.objects.filter(state=ChangeRequestState.PENDING)
        .exclude(author_id=user.pk)
        .exclude(approvals__user_id=user.pk)
        .order_by("created_at", "pk")
    )


def change_requests_under_review() -> Any:
    """Requests applied by break glass whose retroactive review nobody has acknowledged yet."""
    return ChangeRequest.objects.filter(break_glass_by__isnull=False, review_acknowledged_at__isnull=True).order_by(
        "created_at", "pk"
    )


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

"""Reads of configuration. ``config_document`` is the one canonical shape of the whole configuration:

it is what a revision snapshots, what ``export_config`` writes as YAML and what ``import_config``
compares a file against. Keeping one shape means export → import → export cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rules.config.condition_kinds import adapter
from rules.config.document.spelling import CONFIG_FORMAT_VERSION, datetime_out, drop_empty, number_out
from rules.config.event_definitions import canonical_event, canonical_guards
from rules.config.field_definitions import canonical_field
from rules.config.mcp_server_definitions import canonical_mcp_server
from rules.config.tool_definitions import canonical_tool
from rules.engine import CompiledPoint
from rules.engine.evasion import EVASION_OPTIONS
from rules.errors import UnknownMachine
from rules.models import (
    Condition,
    ConfigRevision,
    DecisionPoint,
    KeywordList,
    McpServer,
    Rule,
    StateMachine,
    Threshold,
    ToolContract,
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
    document = {
        "version": CONFIG_FORMAT_VERSION,
        "thresholds": [_threshold_document(t) for t in _by_key(Threshold.objects.all())],
        "keyword_lists": [_keyword_list_document(kl) for kl in _by_key(KeywordList.objects.prefetch_related("terms"))],
        "points": [_point_document(p) for p in _by_key(DecisionPoint.objects.all())],
        "machines": [_machine_document(m) for m in _by_key(StateMachine.objects.all())],
    }
    # Written only when there are tools, so a configuration without any has the digest it had before them.
    tools = sorted(ToolContract.objects.all(), key=lambda t: t.name)
    if tools:
        document["tools"] = [canonical_tool(t.document()) for t in tools]
    servers = sorted(McpServer.objects.all(), key=lambda s: s.name)
    if servers:
        document["mcp_servers"] = [canonical_mcp_server(s.document()) for s in servers]
    return document


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
            # Written only when on, so documents from before the switch read the same.
            **({"store_raw_output": True} if p.store_raw_output else {}),
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
            "fields": [canonical_field(f) for f in m.fields or []],
            "events": [canonical_event(e) for e in m.events or []],
            "guards": canonical_guards(m.guards or {}, m.states),
        },
        "name",
        "description",
        "actions",
        "timeouts",
        "fields",
        "events",
        "guards",
    )


def revision_latest() -> ConfigRevision | None:
    return ConfigRevision.objects.order_by("-number").first()


def revision_get(*, number: int) -> ConfigRevision | None:
    return ConfigRevision.objects.filter(number=number).first()


def machine_get_for_agent(*, allowed: frozenset[str], machine_key: str) -> StateMachine:
    """The state machine ``machine_key`` if a point of the current revision in ``allowed`` (an agent's
    scope) moves sessions of it. Any other key — a machine that exists but none of the agent's points use
    included — is the same ``unknown_machine``, so an agent learns nothing of machines it has no use for."""
    points, _ = points_for_agent(allowed=allowed)
    if machine_key in {p.spec.machine for p in points if p.spec.machine}:
        machine = StateMachine.objects.filter(key=machine_key).first()
        if machine is not None:
            return machine
    raise UnknownMachine(f"There is no state machine '{machine_key}'.")


def points_for_agent(*, allowed: frozenset[str]) -> tuple[list[CompiledPoint], int]:
    """The compiled points of the current revision among ``allowed`` (an agent's scope), by key."""
    from rules.config.runtime import engines  # the runtime imports models; keep selectors importable without it

    config = engines.current()
    return [config.points[k] for k in sorted(config.points) if k in allowed], config.revision

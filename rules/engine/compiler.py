"""Turn a configuration snapshot (the plain data of ``config_document``) into compiled points.

Compilation resolves every reference once — threshold keys become numbers, keyword lists become bit
positions in one scanner per point — so evaluation never looks anything up by name. Each condition is
read by its kind (``rules.engine.conditions``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rules.engine.conditions import CompileContext, read_condition
from rules.engine.evasion import EVASION_OPTIONS
from rules.engine.explain import Explainer, explainer
from rules.engine.keywords import KeywordListSpec, KeywordScanner
from rules.engine.masking import Masker
from rules.engine.model import CompileError as CompileError
from rules.engine.model import MatchedRule, PointSpec, RuleSpec
from rules.engine.request import SessionView
from rules.engine.tools import CompiledTool, compile_tools


class Matcher(Protocol):
    """A point's compiled rules: takes (keyword bitmask, candidate outcome, confidence, facts, session state,
    now, and what rules read of the session — ``NO_SESSION`` when not given) and returns the indexes (into
    ``PointSpec.rules``) of every rule whose conditions hold, in order."""

    def __call__(
        self,
        mask: int,
        cand: str | None,
        conf: float | None,
        facts: Mapping[str, Any],
        state: str | None,
        now: dt.datetime,
        session: SessionView = ...,
        /,
    ) -> tuple[int, ...]: ...


MatcherFactory = Callable[[PointSpec], Matcher]


@dataclass(frozen=True, slots=True)
class CompiledPoint:
    spec: PointSpec
    scanner: KeywordScanner
    matcher: Matcher
    backend: str
    views: tuple[MatchedRule, ...] = ()  # what each rule looks like in a decision, built once
    explainers: tuple[tuple[Explainer, ...], ...] = ()  # per rule, per condition: its words in a reason
    # How this point's log rows are masked (the revision's mask_skip, mask_patterns, mask_facts and
    # mask_fact_paths), compiled once.
    masker: Masker = field(default_factory=Masker)
    # The facts the point's rules (shadow rules too) read: what a masked fact can change in a replay.
    facts_read: frozenset[str] = frozenset()
    # What its rules (shadow rules too) read of a session beyond its state (``rules.engine.request.SessionView``):
    # the fields (``pii_fields``: those of them whose values the log masks), and how many of the session's
    # latest logged decisions (0: none). What a decide reads with the session and records in the log.
    session_fields_read: frozenset[str] = frozenset()
    pii_fields: frozenset[str] = frozenset()
    history_depth: int = 0
    # Whether the model's raw output is stored (the point's ``store_raw_output``; off: the parsed candidate
    # only). It changes no decision, only what the log and the runtime's trace events keep.
    store_raw_output: bool = False

    def reads_session(self) -> bool:
        """Whether the point's rules read a session's fields or history (then its log rows record them)."""
        return bool(self.session_fields_read) or self.history_depth > 0


@dataclass(frozen=True, slots=True)
class CompiledConfig:
    revision: int
    points: Mapping[str, CompiledPoint]
    thresholds: Mapping[str, float]
    backend: str
    # Tool contracts with their schemas compiled (rules.engine.tools), by tool name.
    tools: Mapping[str, CompiledTool] = field(default_factory=dict)
    # Upstream MCP servers by name, as the revision holds them (rules.config.mcp_server_definitions).
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def point(self, key: str) -> CompiledPoint | None:
        return self.points.get(key)


def _datetime(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value


def machine_fields(machine: Mapping[str, Any] | None) -> tuple[dict[str, str], frozenset[str]]:
    """A machine's declared fields (name → type) and those of them that are personal data (``pii``)."""
    declared = [f for f in (machine or {}).get("fields", []) if isinstance(f, Mapping) and "name" in f]
    return {f["name"]: f.get("type", "") for f in declared}, frozenset(f["name"] for f in declared if f.get("pii"))


def point_spec(
    raw: Mapping[str, Any], thresholds: Mapping[str, float], machine: Mapping[str, Any] | None = None
) -> PointSpec:
    """``machine``: the snapshot's machine the point moves, whose fields ``session_field`` conditions read."""
    facts = dict(raw.get("facts", {}))
    session_fields, pii_fields = machine_fields(machine)
    ctx = CompileContext(thresholds=thresholds, facts=facts, session_fields=session_fields, pii_fields=pii_fields)
    rules: list[RuleSpec] = []
    ordered = sorted(raw.get("rules", []), key=lambda r: (int(r["priority"]), r["key"]))
    for r in ordered:
        mode = r.get("mode", "enforce")
        if mode == "off":
            continue
        rules.append(
            RuleSpec(
                key=r["key"],
                description=r.get("description", ""),
                priority=int(r["priority"]),
                category=r["category"],
                combinator=r.get("match", "all"),
                outcome=r["outcome"],
                shadow=mode == "shadow",
                effective_from=_datetime(r.get("effective_from")),
                effective_until=_datetime(r.get("effective_until")),
                conditions=tuple(read_condition(c, ctx) for c in r.get("conditions", [])),
            )
        )
    return PointSpec(
        key=raw["key"],
        name=raw.get("name", ""),
        description=raw.get("description", ""),
        facts=facts,
        outcomes=frozenset(raw["outcomes"]),
        whitelist=frozenset(raw.get("candidate_whitelist", [])),
        default_outcome=raw["default_outcome"],
        ask_when_no_candidate=raw.get("when_no_candidate", "ask") == "ask",
        rules=tuple(rules),
        keyword_lists=ctx.keyword_lists(),
        keyword_unless=ctx.keyword_unless(),
        keyword_negated=ctx.keyword_negated(),
        machine=raw.get("machine", ""),
        state_map=dict(raw.get("state_map", {})),
        fallback_state=raw.get("fallback_state", ""),
    )


def keyword_list_spec(raw: Mapping[str, Any], unless: tuple[str, ...] = (), negated: bool = False) -> KeywordListSpec:
    """A keyword list of a snapshot. A revision written before keyword-evasion matching (rules 0011) has
    neither option: its lists match as they did then, format characters included, so it replays the same.
    One written before rules 0019 has none of ``EVASION_OPTIONS``, and matches without them."""
    evasion_aware = "fold_traditional" in raw or "ignore_cjk_gaps" in raw
    return KeywordListSpec(
        key=raw["key"],
        match=raw.get("match", "substring"),
        terms=tuple(raw.get("terms", [])),
        fold_traditional=bool(raw.get("fold_traditional", False)),
        ignore_cjk_gaps=bool(raw.get("ignore_cjk_gaps", False)),
        ignore_format=evasion_aware,
        unless=unless,
        unless_negated=negated,
        **{option: bool(raw.get(option, False)) for option in EVASION_OPTIONS},
    )


@functools.lru_cache(maxsize=32)
def keyword_scanner(lists: tuple[KeywordListSpec, ...]) -> KeywordScanner:
    """One scanner per distinct set of keyword lists, shared by every revision (and every proposal) whose point
    uses the same lists: a scanner is immutable and a pure function of its lists, and building one is most of
    a compile (the 200-rule benchmark point: ~40 of ~55 ms), while most changes leave the lists alone."""
    return KeywordScanner(lists)


def compile_snapshot(
    snapshot: Mapping[str, Any], *, revision: int, matcher_factory: MatcherFactory, backend: str
) -> CompiledConfig:
    thresholds = {t["key"]: float(t["value"]) for t in snapshot.get("thresholds", [])}
    lists = {kl["key"]: kl for kl in snapshot.get("keyword_lists", [])}
    machines = {m["key"]: m for m in snapshot.get("machines", [])}
    points: dict[str, CompiledPoint] = {}
    for raw in snapshot.get("points", []):
        machine = machines.get(raw.get("machine", ""))
        spec = point_spec(raw, thresholds, machine)
        conditions = [c for r in spec.rules for c in r.conditions]
        fields_read = frozenset(name for c in conditions if (name := c.session_field_read()) is not None)
        missing = [k for k in spec.keyword_lists if k not in lists]
        if missing:
            raise CompileError(f"point {spec.key}: unknown keyword list {', '.join(missing)}")
        scanner = keyword_scanner(
            tuple(
                keyword_list_spec(lists[k], unless, negated)
                for k, unless, negated in zip(
                    spec.keyword_lists, spec.keyword_unless, spec.keyword_negated, strict=True
                )
            )
        )
        views = tuple(
            MatchedRule(key=r.key, priority=r.priority, category=r.category, outcome=r.outcome, shadow=r.shadow)
            for r in spec.rules
        )
        points[spec.key] = CompiledPoint(
            spec=spec,
            scanner=scanner,
            matcher=matcher_factory(spec),
            backend=backend,
            views=views,
            explainers=tuple(tuple(explainer(c) for c in r.conditions) for r in spec.rules),
            masker=Masker(
                skip=raw.get("mask_skip", ()),
                extra=raw.get("mask_patterns") or {},
                fact_paths=raw.get("mask_fact_paths", ()),
                # A revision from before fact masking (rules 0014) masks facts as every point now does.
                facts=bool(raw.get("mask_facts", True)),
            ),
            facts_read=frozenset(fact for c in conditions if (fact := c.fact_read()) is not None),
            session_fields_read=fields_read,
            pii_fields=fields_read & machine_fields(machine)[1],
            history_depth=max((c.history_depth() for c in conditions), default=0),
            store_raw_output=raw.get("store_raw_output") is True,
        )
    return CompiledConfig(
        revision=revision,
        points=points,
        thresholds=thresholds,
        backend=backend,
        tools=compile_tools(snapshot),
        mcp_servers={s["name"]: s for s in snapshot.get("mcp_servers", [])},
    )

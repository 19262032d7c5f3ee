"""Check a configuration document without the database, and bring it into canonical shape.

The canonical shape is exactly what ``rules.selectors.config_document`` returns for the same
configuration: defaults filled in, empty optional fields dropped, records in the selector's order,
numbers, times and datetimes in the selector's spelling. That is what makes the diff a plain
comparison and export → import → export byte-identical.

Nothing here touches the database — teams run ``validate_config`` in their own CI. The checks mirror
the models' ``clean()`` (and reuse their helpers where they are pure), so a document that passes here
is one the record services accept; apply still runs ``full_clean`` on every record it writes.
"""

from __future__ import annotations

import math
import re
import zoneinfo
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from rules.conditions import ADAPTERS, DOCUMENT_KEYS, KINDS
from rules.conditions.base import DocumentContext
from rules.document import datetime_out, drop_empty, number_out
from rules.engine.normalize import normalize_term
from rules.errors import ConfigError
from rules.machines import machine_problems
from rules.models.config import (
    FactType,
    MatchMode,
    NoCandidatePolicy,
    RuleCategory,
    RuleCombinator,
    RuleMode,
)
from rules.selectors import CONFIG_FORMAT_VERSION
from rules.validators import masking_problems, session_mapping_problems

from .readers import KEY, Reader, clause, describe, one_of
from .yamlload import LoadedYaml, Path, load_yaml

TOP_KEYS = ("version", "thresholds", "keyword_lists", "points", "machines")
THRESHOLD_KEYS = ("key", "name", "description", "value", "unit", "min", "max", "high_risk")
THRESHOLD_REQUIRED = ("key", "value")
LIST_KEYS = ("key", "name", "description", "match", "terms")
LIST_REQUIRED = ("key", "terms")
POINT_KEYS = (
    "key",
    "name",
    "description",
    "facts",
    "outcomes",
    "candidate_whitelist",
    "default_outcome",
    "when_no_candidate",
    "machine",
    "state_map",
    "fallback_state",
    "mask_skip",
    "mask_patterns",
    "rules",
)
POINT_REQUIRED = ("key", "outcomes", "default_outcome")
RULE_KEYS = (
    "key",
    "description",
    "priority",
    "category",
    "match",
    "mode",
    "outcome",
    "effective_from",
    "effective_until",
    "conditions",
)
RULE_REQUIRED = ("key", "priority", "category", "outcome", "conditions")
MACHINE_KEYS = (
    "key",
    "name",
    "description",
    "states",
    "initial",
    "handoff",
    "terminal",
    "transitions",
    "actions",
    "timeouts",
    "max_anomalies",
)
MACHINE_REQUIRED = ("key", "states", "initial", "handoff", "transitions")
CONDITION_KINDS: tuple[str, ...] = KINDS

# ``machine_problems`` names model fields; the document names them like this.
_MACHINE_FIELD_KEYS = {
    "states": "states",
    "initial_state": "initial",
    "handoff_state": "handoff",
    "terminal_states": "terminal",
    "transitions": "transitions",
    "actions": "actions",
    "timeouts": "timeouts",
}


def config_check(text: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Parse and check a YAML document: (canonical document, []) or (None, every problem in line order)."""
    loaded = load_yaml(text)
    document = None
    if loaded.parsed:
        document = _Checker(loaded).document(loaded.data)
    if loaded.problems:
        # A stable sort keeps problems on the same line in the order they were found.
        return None, [str(p) for p in sorted(loaded.problems, key=lambda p: p.line)]
    return document, []


def config_problems(text: str) -> list[str]:
    """Every problem of a YAML configuration document, one message each; empty when it is valid."""
    return config_check(text)[1]


def config_from_yaml(text: str) -> dict[str, Any]:
    """The canonical document of a valid YAML configuration; raises ``ConfigError`` listing every problem."""
    document, problems = config_check(text)
    if problems or document is None:
        raise ConfigError(problems or ["document: not a configuration (line 1)"])
    return document


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f")


def known_time_zone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


class _Checker(Reader):
    """Walks the data once, records every problem with its path and line, and builds the canonical form.

    Each record method (``threshold``, ``keyword_list``, ``point``, ``rule``, ``condition``, ``machine``)
    returns the canonical record, or ``None`` when the record has a problem (which has then been
    recorded); a document with any problem has no canonical form.
    """

    def __init__(self, loaded: LoadedYaml) -> None:
        super().__init__(loaded)
        self.threshold_keys: set[str] = set()
        self.list_keys: set[str] = set()

    def document(self, data: Any) -> dict[str, Any] | None:
        root = self.mapping(data, (), TOP_KEYS, TOP_KEYS, what="a mapping with the keys " + one_of(TOP_KEYS))
        if root is None:
            return None
        start = self.count()
        if "version" in root:
            version = root["version"]
            if isinstance(version, bool) or version != CONFIG_FORMAT_VERSION:
                self.problem(
                    ("version",),
                    f"unsupported format version {describe(version)}; this Arbiter reads "
                    f"version {CONFIG_FORMAT_VERSION}",
                )
        sections: dict[str, list[Any]] = {}
        for name in TOP_KEYS[1:]:
            if name in root:
                items = self.sequence(root[name], (name,))
                sections[name] = items if items is not None else []
            else:
                sections[name] = []

        # References are checked against every key the file declares, valid record or not, so that a
        # threshold with a bad value is reported once, not again by each rule that uses it.
        self.threshold_keys = _declared_keys(sections["thresholds"])
        self.list_keys = _declared_keys(sections["keyword_lists"])
        self.machine_states = {
            item["key"]: [s for s in item.get("states", []) if isinstance(s, str)]
            for item in sections["machines"]
            if isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("states"), list)
        }

        thresholds = self.section(sections["thresholds"], "thresholds", self.threshold)
        keyword_lists = self.section(sections["keyword_lists"], "keyword_lists", self.keyword_list)
        points = self.section(sections["points"], "points", self.point)
        machines = self.section(sections["machines"], "machines", self.machine)
        if self.count() > start:
            return None
        return {
            "version": CONFIG_FORMAT_VERSION,
            "thresholds": thresholds,
            "keyword_lists": keyword_lists,
            "points": points,
            "machines": machines,
        }

    def section(
        self, items: list[Any], name: str, check: Callable[[Any, Path], dict[str, Any] | None]
    ) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        keyed: list[tuple[Path, str]] = []
        for index, item in enumerate(items):
            path: Path = (name, index)
            record = check(item, path)
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                keyed.append((path, item["key"]))
            if record is not None:
                records.append(record)
        self.unique(keyed, name)
        return sorted(records, key=lambda r: r["key"])

    def threshold(self, item: Any, path: Path) -> dict[str, Any] | None:
        record = self.mapping(item, path, THRESHOLD_KEYS, THRESHOLD_REQUIRED, what="a threshold (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        name = self.optional_text(record, path, "name", 200)
        description = self.optional_text(record, path, "description")
        unit = self.optional_text(record, path, "unit", 32)
        value = self.number(record["value"], (*path, "value")) if "value" in record else None
        low_ok, low = self.optional_number(record, path, "min")
        high_ok, high = self.optional_number(record, path, "max")
        high_risk = self.boolean(record, path, "high_risk", False)
        if low_ok and high_ok and low is not None and high is not None and low > high:
            self.problem((*path, "max"), f"the upper bound {_plain(high)} is below the lower bound {_plain(low)}")
        elif (
            low_ok
            and high_ok
            and value is not None
            and ((low is not None and value < low) or (high is not None and value > high))
        ):
            bounds = f"{'−∞' if low is None else _plain(low)} … {'+∞' if high is None else _plain(high)}"
            self.problem(
                (*path, "value"),
                f"{_plain(value)} is outside the allowed bounds {bounds}{(' ' + unit) if unit else ''}",
            )
        if self.count() > start or key is None or value is None:
            return None
        return drop_empty(
            {
                "key": key,
                "name": name,
                "description": description,
                "value": number_out(value),
                "unit": unit,
                "min": number_out(low),
                "max": number_out(high),
                "high_risk": high_risk,
            },
            "name",
            "description",
            "unit",
            "min",
            "max",
        )

    def keyword_list(self, item: Any, path: Path) -> dict[str, Any] | None:
        record = self.mapping(item, path, LIST_KEYS, LIST_REQUIRED, what="a keyword list (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        name = self.optional_text(record, path, "name", 200)
        description = self.optional_text(record, path, "description")
        match = self.choice(record, path, "match", MatchMode.values, MatchMode.SUBSTRING.value)
        terms: list[str] = []
        items = self.sequence(record["terms"], (*path, "terms")) if "terms" in record else None
        seen: dict[str, int] = {}
        for index, term_item in enumerate(items or []):
            term_path = (*path, "terms", index)
            written = self.text(term_item, term_path)
            if written is None:
                continue
            term = normalize_term(written, match or MatchMode.SUBSTRING)
            if not term:
                self.problem(term_path, "a term cannot be empty")
            elif len(term) > 200:
                self.problem(term_path, "longer than 200 characters")
            elif term in seen:
                if term == written:
                    self.problem(term_path, f"'{written}' is listed twice (also at terms[{seen[term]}])")
                else:
                    self.problem(
                        term_path,
                        f"'{written}' is the same term as terms[{seen[term]}] ('{term}') after normalisation "
                        "(NFKC, case folding)",
                    )
            else:
                problem = _regex_problem(term) if match == MatchMode.REGEX else None
                if problem:
                    self.problem(term_path, f"'{written}' {problem}")
                    continue
                seen[term] = index
                terms.append(term)
        if self.count() > start or key is None:
            return None
        return drop_empty(
            {"key": key, "name": name, "description": description, "match": match, "terms": terms},
            "name",
            "description",
        )

    def point(self, item: Any, path: Path) -> dict[str, Any] | None:
        record = self.mapping(item, path, POINT_KEYS, POINT_REQUIRED, what="a decision point (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        label = key or "this point"
        name = self.optional_text(record, path, "name", 200)
        description = self.optional_text(record, path, "description")
        facts = self.facts(record.get("facts"), (*path, "facts"))
        outcomes = (
            self.key_list(
                record["outcomes"], (*path, "outcomes"), non_empty="a decision point needs at least one outcome"
            )
            if "outcomes" in record
            else None
        )
        whitelist = self.key_list(_get(record, "candidate_whitelist", []), (*path, "candidate_whitelist"))
        if whitelist is not None and outcomes is not None:
            for index, outcome in enumerate(whitelist):
                if outcome not in outcomes:
                    self.problem((*path, "candidate_whitelist", index), f"'{outcome}' is not an outcome of {label}")
        default_outcome = None
        if "default_outcome" in record:
            default_outcome = self.key(record["default_outcome"], (*path, "default_outcome"))
            if default_outcome is not None and outcomes is not None and default_outcome not in outcomes:
                self.problem((*path, "default_outcome"), f"'{default_outcome}' is not an outcome of {label}")
        no_candidate = self.choice(
            record, path, "when_no_candidate", NoCandidatePolicy.values, NoCandidatePolicy.ASK.value
        )
        machine = self.optional_text(record, path, "machine", 64)
        state_map = _get(record, "state_map", {})
        fallback_state = self.optional_text(record, path, "fallback_state", 64)
        if outcomes is not None and machine is not None and fallback_state is not None:
            for field, problem in session_mapping_problems(
                machine=machine,
                state_map=state_map,
                fallback_state=fallback_state,
                outcomes=outcomes,
                machine_states=self.machine_states.get(machine),
            ).items():
                self.problem((*path, field), problem[0].lower() + problem[1:].rstrip("."))
        mask_skip = _get(record, "mask_skip", [])
        mask_patterns = _get(record, "mask_patterns", {})
        for field, problem in masking_problems(mask_skip, mask_patterns).items():
            self.problem((*path, field), problem[0].lower() + problem[1:].rstrip("."))
        rules: list[dict[str, Any]] = []
        keyed: list[tuple[Path, str]] = []
        rule_items = self.sequence(_get(record, "rules", []), (*path, "rules"))
        for index, rule_item in enumerate(rule_items or []):
            rule_path: Path = (*path, "rules", index)
            rule = self.rule(rule_item, rule_path, point=label, facts=facts, outcomes=outcomes)
            if isinstance(rule_item, dict) and isinstance(rule_item.get("key"), str):
                keyed.append((rule_path, rule_item["key"]))
            if rule is not None:
                rules.append(rule)
        self.unique(keyed, "rules")
        if self.count() > start or key is None:
            return None
        rules.sort(key=lambda r: (r["priority"], r["key"]))
        return drop_empty(
            {
                "key": key,
                "name": name,
                "description": description,
                "facts": facts,
                "outcomes": outcomes,
                "candidate_whitelist": whitelist,
                "default_outcome": default_outcome,
                "when_no_candidate": no_candidate,
                "machine": machine,
                "state_map": dict(state_map),
                "fallback_state": fallback_state,
                "mask_skip": list(mask_skip),
                "mask_patterns": dict(mask_patterns),
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
        )

    def facts(self, value: Any, path: Path) -> dict[str, str] | None:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping of fact name to type, got {describe(value)}")
            return None
        facts: dict[str, str] = {}
        ok = True
        for name, typ in value.items():
            fact_path = (*path, name)
            if not KEY.fullmatch(name):
                self.problem(fact_path, f"fact name '{name}' is not a valid key")
                ok = False
                continue
            text = self.text(typ, fact_path)
            if text is None:
                ok = False
            elif text not in FactType.values:
                self.problem(fact_path, f"unknown fact type '{text}' (use {one_of(FactType.values)})")
                ok = False
            else:
                facts[name] = text
        return facts if ok else None

    def rule(
        self, item: Any, path: Path, *, point: str, facts: dict[str, str] | None, outcomes: list[str] | None
    ) -> dict[str, Any] | None:
        record = self.mapping(item, path, RULE_KEYS, RULE_REQUIRED, what="a rule (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        description = self.optional_text(record, path, "description", 300)
        priority = self.integer(record["priority"], (*path, "priority"), minimum=0) if "priority" in record else None
        category = self.choice(record, path, "category", RuleCategory.values, None) if "category" in record else None
        combinator = self.choice(record, path, "match", RuleCombinator.values, RuleCombinator.ALL.value)
        mode = self.choice(record, path, "mode", RuleMode.values, RuleMode.ENFORCE.value)
        outcome = None
        if "outcome" in record:
            outcome = self.key(record["outcome"], (*path, "outcome"))
            if outcome is not None and outcomes is not None and outcome not in outcomes:
                self.problem((*path, "outcome"), f"'{outcome}' is not an outcome of {point}")
        from_ok, effective_from = self.moment(record, path, "effective_from")
        until_ok, effective_until = self.moment(record, path, "effective_until")
        if from_ok and until_ok and effective_from and effective_until and effective_from >= effective_until:
            self.problem((*path, "effective_until"), "the end of the effective period must come after its start")
        conditions: list[dict[str, Any]] = []
        condition_items = self.sequence(record["conditions"], (*path, "conditions")) if "conditions" in record else []
        for index, condition_item in enumerate(condition_items or []):
            condition = self.condition(
                condition_item, (*path, "conditions", index), point=point, facts=facts, outcomes=outcomes
            )
            if condition is not None:
                conditions.append(condition)
        if self.count() > start or None in (key, priority, category, outcome):
            return None
        return drop_empty(
            {
                "key": key,
                "description": description,
                "priority": priority,
                "category": category,
                "match": combinator,
                "mode": mode,
                "outcome": outcome,
                "effective_from": datetime_out(effective_from),
                "effective_until": datetime_out(effective_until),
                "conditions": conditions,
            },
            "description",
            "effective_from",
            "effective_until",
        )

    def condition(
        self, item: Any, path: Path, *, point: str, facts: dict[str, str] | None, outcomes: list[str] | None
    ) -> dict[str, Any] | None:
        kinds_help = f"a condition (a mapping with one of: {one_of(CONDITION_KINDS)})"
        if not isinstance(item, dict):
            self.problem(path, f"expected {kinds_help}, got {describe(item)}")
            return None
        kinds = [k for k in item if k in CONDITION_KINDS]
        if not kinds:
            unknown = [k for k in item if k not in DOCUMENT_KEYS]
            for key in unknown:
                self.problem((*path, key), f"unknown key '{key}' (expected one of: {one_of(CONDITION_KINDS)})")
            if not unknown:
                self.problem(path, f"a condition needs one of: {one_of(CONDITION_KINDS)}")
            return None
        if len(kinds) > 1:
            self.problem(path, f"a condition has exactly one kind; this one has {' and '.join(kinds)}")
            return None
        context = DocumentContext(
            point=point,
            facts=facts,
            outcomes=outcomes,
            thresholds=frozenset(self.threshold_keys),
            keyword_lists=frozenset(self.list_keys),
        )
        return ADAPTERS[kinds[0]].read(self, item, path, context)

    def machine(self, item: Any, path: Path) -> dict[str, Any] | None:
        record = self.mapping(item, path, MACHINE_KEYS, MACHINE_REQUIRED, what="a state machine (a mapping)")
        if record is None:
            return None
        start = self.count()
        key = self.key(record.get("key"), (*path, "key")) if "key" in record else None
        name = self.optional_text(record, path, "name", 200)
        description = self.optional_text(record, path, "description")
        states = self.key_list(record["states"], (*path, "states")) if "states" in record else None
        initial = self.key(record["initial"], (*path, "initial")) if "initial" in record else None
        handoff = self.key(record["handoff"], (*path, "handoff")) if "handoff" in record else None
        terminal = self.key_list(_get(record, "terminal", []), (*path, "terminal"))
        transitions = self.state_mapping(record.get("transitions"), (*path, "transitions"), self.key_list)
        actions = self.state_mapping(_get(record, "actions", {}), (*path, "actions"), self.action_list)
        timeouts = self.state_mapping(_get(record, "timeouts", {}), (*path, "timeouts"), self.seconds)
        max_anomalies = self.integer(_get(record, "max_anomalies", 3), (*path, "max_anomalies"), minimum=1)
        if states is None or transitions is None:
            return None
        # The graph checks run even when a side field is unreadable, so that every problem shows at once;
        # a field already reported as unreadable is not reported again.
        readable = {
            "initial_state": initial is not None,
            "handoff_state": handoff is not None,
            "terminal_states": terminal is not None,
            "actions": actions is not None,
            "timeouts": timeouts is not None,
        }
        for field, message in machine_problems(
            states=states,
            initial_state=initial or "",
            handoff_state=handoff or "",
            terminal_states=terminal or [],
            transitions=transitions,
            actions=actions or {},
            timeouts=timeouts or {},
        ).items():
            if readable.get(field, True):
                self.problem((*path, _MACHINE_FIELD_KEYS.get(field, field)), clause(message))
        if self.count() > start or actions is None or timeouts is None:
            return None
        return drop_empty(
            {
                "key": key,
                "name": name,
                "description": description,
                "states": states,
                "initial": initial,
                "handoff": handoff,
                "terminal": terminal,
                "transitions": {s: transitions[s] for s in states if transitions.get(s)},
                "actions": {s: actions[s] for s in states if s in actions},
                "timeouts": {s: timeouts[s] for s in states if s in timeouts},
                "max_anomalies": max_anomalies,
            },
            "name",
            "description",
            "actions",
            "timeouts",
        )

    def state_mapping(self, value: Any, path: Path, check: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping of state to values, got {describe(value)}")
            return None
        result: dict[str, Any] = {}
        ok = True
        for state, item in value.items():
            checked = check(item, (*path, state))
            if checked is None:
                ok = False
            else:
                result[state] = checked
        return result if ok else None

    def action_list(self, value: Any, path: Path) -> list[str] | None:
        items = self.sequence(value, path)
        if items is None:
            return None
        actions = [self.text(item, (*path, index)) for index, item in enumerate(items)]
        if any(a is None for a in actions):
            return None
        if any(not a for a in actions):
            self.problem(path, "an action name cannot be empty")
            return None
        return [a for a in actions if a]

    def seconds(self, value: Any, path: Path) -> int | float | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            self.problem(path, f"expected a positive number of seconds, got {describe(value)}")
            return None
        return value


def _regex_problem(term: str) -> str | None:
    try:
        re.compile(term)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    return None


def _get(record: dict[str, Any], name: str, default: Any) -> Any:
    """An optional field: missing or null means the default."""
    value = record.get(name)
    return default if value is None else value


def _declared_keys(items: list[Any]) -> set[str]:
    return {item["key"] for item in items if isinstance(item, dict) and isinstance(item.get("key"), str)}

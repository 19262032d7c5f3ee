"""Check a configuration document without the database, and bring it into canonical shape.

The canonical shape is exactly what ``rules.config.selectors.config_document`` returns for the same
configuration: defaults filled in, empty optional fields dropped, records in the selector's order,
numbers, times and datetimes in the selector's spelling. That is what makes the diff a plain
comparison and export → import → export byte-identical.

Nothing here touches the database — teams run ``validate_config`` in their own CI. This module walks
the YAML: it reads each value's shape with a path and a line for every problem, and brings the
document into canonical form. What a value may be is decided by the validators the models' ``clean()``
calls too (``rules.config.validators``, and each kind of condition's adapter in ``rules.config.condition_kinds``), so a
document that passes here is one the record services accept; apply still runs ``full_clean`` on every
record it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rules.config.choices import MatchMode, NoCandidatePolicy, RuleCategory, RuleCombinator, RuleMode
from rules.config.condition_kinds import ADAPTERS, DOCUMENT_KEYS, KINDS
from rules.config.condition_kinds.base import DocumentContext
from rules.config.document.machine_reader import MachineReader
from rules.config.document.mcp_server_reader import McpServerReader
from rules.config.document.readers import clause, describe, one_of, or_default
from rules.config.document.spelling import CONFIG_FORMAT_VERSION, datetime_out, drop_empty, number_out
from rules.config.document.tool_reader import ToolReader
from rules.config.validators import (
    MAX_TERM_LENGTH,
    NO_OUTCOMES,
    TermSet,
    fact_masking_problems,
    fact_name_problem,
    fact_type_problem,
    masking_problems,
    outcome_problem,
    rule_problems,
    session_mapping_problems,
    term_problem,
    threshold_problems,
)
from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.engine.normalize import normalize_term
from rules.errors import ConfigError

from .yamlload import LoadedYaml, Path, load_yaml

TOP_KEYS = ("version", "thresholds", "keyword_lists", "points", "machines", "tools", "mcp_servers")
TOP_REQUIRED = TOP_KEYS[:5]  # tools and MCP servers are optional: a document from before them reads as it did
THRESHOLD_KEYS = ("key", "name", "description", "value", "unit", "min", "max", "high_risk")
THRESHOLD_REQUIRED = ("key", "value")
LIST_KEYS = ("key", "name", "description", "match", "fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS, "terms")
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
    "mask_fact_paths",
    "mask_facts",
    "store_raw_output",
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
CONDITION_KINDS: tuple[str, ...] = KINDS

# ``threshold_problems`` names model fields; the document names them like this.
_THRESHOLD_FIELD_KEYS = {"value": "value", "min_value": "min", "max_value": "max"}


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


class _Checker(McpServerReader, ToolReader, MachineReader):
    """Walks the data once, records every problem with its path and line, and builds the canonical form.

    Each record method (``threshold``, ``keyword_list``, ``point``, ``rule``, ``condition``, ``machine``)
    returns the canonical record, or ``None`` when the record has a problem (which has then been
    recorded); a document with any problem has no canonical form.
    """

    def __init__(self, loaded: LoadedYaml) -> None:
        super().__init__(loaded)
        self.threshold_keys: set[str] = set()
        self.list_keys: set[str] = set()
        self.point_machine = ""  # the machine of the point whose rules are being read

    def document(self, data: Any) -> dict[str, Any] | None:
        root = self.mapping(data, (), TOP_KEYS, TOP_REQUIRED, what="a mapping with the keys " + one_of(TOP_KEYS))
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
        self.note_references(sections)

        thresholds = self.section(sections["thresholds"], "thresholds", self.threshold)
        keyword_lists = self.section(sections["keyword_lists"], "keyword_lists", self.keyword_list)
        points = self.section(sections["points"], "points", self.point)
        machines = self.section(sections["machines"], "machines", self.machine)
        tools = self.tools(sections["tools"], sections["machines"])
        mcp_servers = self.mcp_servers(sections["mcp_servers"])
        if self.count() > start:
            return None
        return {
            "version": CONFIG_FORMAT_VERSION,
            "thresholds": thresholds,
            "keyword_lists": keyword_lists,
            "points": points,
            "machines": machines,
            **({"tools": tools} if tools else {}),  # as config_document: only when there are tools
            **({"mcp_servers": mcp_servers} if mcp_servers else {}),  # and servers
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
        if low_ok and high_ok:
            for field, problem in threshold_problems(value=value, min_value=low, max_value=high, unit=unit).items():
                self.problem((*path, _THRESHOLD_FIELD_KEYS[field]), clause(problem))
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
        fold_traditional = self.boolean(record, path, "fold_traditional", True)
        ignore_cjk_gaps = self.boolean(record, path, "ignore_cjk_gaps", True)
        options = {option: self.boolean(record, path, option, EVASION_DEFAULTS[option]) for option in EVASION_OPTIONS}
        items = self.sequence(record["terms"], (*path, "terms")) if "terms" in record else None
        terms = self.terms(items or [], (*path, "terms"), match or MatchMode.SUBSTRING)
        if self.count() > start or key is None:
            return None
        return drop_empty(
            {
                "key": key,
                "name": name,
                "description": description,
                "match": match,
                # Always written: a revision holding them matches with keyword-evasion rules (see
                # rules.engine.compiler.keyword_list_spec), one from before does not.
                "fold_traditional": fold_traditional,
                "ignore_cjk_gaps": ignore_cjk_gaps,
                **options,
                "terms": terms,
            },
            "name",
            "description",
        )

    def terms(self, items: list[Any], path: Path, match: str) -> list[str]:
        """The terms of a list as stored; a problem for each that is unreadable, refused, or already listed."""
        terms: list[str] = []
        seen = TermSet(match)
        for index, item in enumerate(items):
            term_path = (*path, index)
            written = self.text(item, term_path)
            if written is None:
                continue
            term = normalize_term(written, match)
            if len(term) > MAX_TERM_LENGTH:
                self.problem(term_path, f"longer than {MAX_TERM_LENGTH} characters")
            elif problem := term_problem(term, match, subject=written):
                self.problem(term_path, clause(problem))
            elif (earlier := seen.add(written, index)) is None:
                terms.append(term)
            elif term == written:
                self.problem(term_path, f"'{written}' is listed twice (also at terms[{earlier}])")
            else:
                self.problem(
                    term_path,
                    f"'{written}' is the same term as terms[{earlier}] ('{term}') after normalisation "
                    "(NFKC, case folding)",
                )
        return terms

    # Long (about 100 lines) on purpose: one point's fields are read in the order the document defines
    # them and checked against each other (outcomes, whitelist, machine, masking, rules); split, each part
    # would take and return most of the others.
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
            self.key_list(record["outcomes"], (*path, "outcomes"), non_empty=clause(NO_OUTCOMES))
            if "outcomes" in record
            else None
        )
        whitelist = self.key_list(or_default(record, "candidate_whitelist", []), (*path, "candidate_whitelist"))
        if whitelist is not None and outcomes is not None:
            for index, outcome in enumerate(whitelist):
                if problem := outcome_problem(outcome, outcomes, label):
                    self.problem((*path, "candidate_whitelist", index), clause(problem))
        default_outcome = None
        if "default_outcome" in record:
            default_outcome = self.key(record["default_outcome"], (*path, "default_outcome"))
            if (
                default_outcome is not None
                and outcomes is not None
                and (problem := outcome_problem(default_outcome, outcomes, label))
            ):
                self.problem((*path, "default_outcome"), clause(problem))
        no_candidate = self.choice(
            record, path, "when_no_candidate", NoCandidatePolicy.values, NoCandidatePolicy.ASK.value
        )
        machine = self.optional_text(record, path, "machine", 64)
        state_map = or_default(record, "state_map", {})
        fallback_state = self.optional_text(record, path, "fallback_state", 64)
        if outcomes is not None and machine is not None and fallback_state is not None:
            for field, problem in session_mapping_problems(
                machine=machine,
                state_map=state_map,
                fallback_state=fallback_state,
                outcomes=outcomes,
                machine_states=self.machine_states.get(machine),
            ).items():
                self.problem((*path, field), clause(problem))
        mask_skip = or_default(record, "mask_skip", [])
        mask_patterns = or_default(record, "mask_patterns", {})
        for field, problem in masking_problems(mask_skip, mask_patterns).items():
            self.problem((*path, field), clause(problem))
        mask_fact_paths = or_default(record, "mask_fact_paths", [])
        mask_facts = self.boolean(record, path, "mask_facts", True)
        for field, problem in fact_masking_problems(
            # A mask_facts that is not a boolean is reported by ``boolean`` above.
            mask_fact_paths,
            mask_facts if isinstance(mask_facts, bool) else True,
            facts if isinstance(facts, dict) else None,
        ).items():
            self.problem((*path, field), clause(problem))
        store_raw_output = self.boolean(record, path, "store_raw_output", False)
        rules: list[dict[str, Any]] = []
        keyed: list[tuple[Path, str]] = []
        rule_items = self.sequence(or_default(record, "rules", []), (*path, "rules"))
        self.point_machine = machine or ""  # what its session_field conditions are read against
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
                "mask_fact_paths": list(mask_fact_paths),
                **({} if mask_facts else {"mask_facts": False}),
                **({"store_raw_output": True} if store_raw_output is True else {}),
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
            if problem := fact_name_problem(name):
                self.problem(fact_path, clause(problem))
                ok = False
                continue
            text = self.text(typ, fact_path)
            if text is None:
                ok = False
            elif problem := fact_type_problem(text):
                self.problem(fact_path, clause(problem))
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
        outcome = self.key(record["outcome"], (*path, "outcome")) if "outcome" in record else None
        from_ok, effective_from = self.moment(record, path, "effective_from")
        until_ok, effective_until = self.moment(record, path, "effective_until")
        for field, problem in rule_problems(
            outcome=outcome,
            outcomes=outcomes,
            point=point,
            effective_from=effective_from if from_ok and until_ok else None,
            effective_until=effective_until,
        ).items():
            self.problem((*path, field), clause(problem))
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
            machine=self.point_machine,
            session_fields=self.machine_fields.get(self.point_machine) if self.point_machine else {},
        )
        return ADAPTERS[kinds[0]].read(self, item, path, context)


def _declared_keys(items: list[Any]) -> set[str]:
    return {item["key"] for item in items if isinstance(item, dict) and isinstance(item.get("key"), str)}

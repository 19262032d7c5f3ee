"""Import a YAML configuration: validate it, diff it against the live one, write the difference.

The file is the whole configuration. Records it does not mention are deleted; records it mentions
unchanged are not touched (no history rows, no revision); everything else is written through the
audited record services inside one ``config_change`` — one transaction, one new revision, all or
nothing.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from rules.config import records
from rules.config.condition_kinds import ADAPTERS, empty_inputs
from rules.config.condition_kinds.base import Records
from rules.config.document.diff import RecordChange, config_diff, diff_lines, same
from rules.config.document.validate import config_from_yaml
from rules.config.machines import machine_delete, machine_save
from rules.config.mcp_servers import mcp_server_delete, mcp_server_fill, mcp_server_store
from rules.config.revisions import Actor, config_change
from rules.config.selectors import condition_document, config_document, revision_latest
from rules.config.tools import tool_delete, tool_fill, tool_save
from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.errors import ApprovalRequired, ConfigError
from rules.governance.risk import RiskReason, change_risks
from rules.hooks import point_removal_notes
from rules.models import (
    ChangeRequest,
    Condition,
    DecisionPoint,
    KeywordList,
    KeywordTerm,
    McpServer,
    Rule,
    StateMachine,
    Threshold,
    ToolContract,
)


@dataclass(frozen=True)
class ImportResult:
    """What an import did (or, for a dry run, would do).

    ``diff`` has one line per added/removed record and per changed field; ``changed`` says whether
    the file differs from the live configuration; ``revision`` is the number of the revision the
    import created — ``None`` for a dry run, when nothing changed, when the change waits for approval,
    or when the import ran inside an outer ``config_change`` (which cuts the revision when it ends).
    ``risks`` says which parts need a second person's approval; when they do, nothing was applied and
    ``change_request`` is the pending request the import became.
    """

    diff: list[str] = field(default_factory=list)
    changed: bool = False
    revision: int | None = None
    risks: list[RiskReason] = field(default_factory=list)
    change_request: ChangeRequest | None = None


class _DryRun(Exception):
    """Raised after a trial apply, to roll it back."""


def config_import(*, text: str, source: str, actor: Actor, reason: str, dry_run: bool = False) -> ImportResult:
    """Make the live configuration equal to the YAML document ``text`` (read from ``source``).

    Raises ``ConfigError`` listing every problem — of the document (path and line each) or, rarely,
    of a record the database refuses (naming the record) — and then nothing is written. A dry run
    performs the whole apply inside a savepoint and rolls it back, so it finds the same problems a
    real import would, and leaves no trace. A high-risk change is not applied: it becomes a pending
    change request (``ImportResult.change_request``).
    """
    document = config_from_yaml(text)
    return config_apply(document=document, actor=actor, reason=reason or f"import_config {source}", dry_run=dry_run)


def config_apply(
    *,
    document: dict[str, Any],
    actor: Actor,
    reason: str,
    dry_run: bool = False,
    change_request: ChangeRequest | None = None,
) -> ImportResult:
    """Make the live configuration equal to ``document`` (canonical, already validated); see ``config_import``.

    ``change_request`` is for ``change_request_apply`` only: the approved request whose change this is.
    """
    lines: list[str] = []
    changes: list[RecordChange] = []
    risks: list[RiskReason] = []
    try:
        # The savepoint lets a dry run roll back even inside an outer change. The live side is read
        # inside, under the configuration writers' lock, so no other writer slips in between.
        with config_change(actor=actor, reason=reason, change_request=change_request) as change, transaction.atomic():
            live = config_document()
            changes = config_diff(live, document)
            lines = diff_lines(changes, notes=_removal_notes(changes))
            if changes and dry_run and revision_latest() is not None:
                risks = change_risks(live, document, changes)
            if changes:
                _Applier(actor=actor, reason=reason).apply(document, changes)
            if dry_run and changes:
                raise _DryRun
    except _DryRun:
        return ImportResult(diff=lines, changed=True, revision=None, risks=risks)
    except ApprovalRequired as held:
        request = held.change_request
        return ImportResult(
            diff=lines,
            changed=True,
            revision=None,
            risks=[
                RiskReason(r["record"], r["why"], r.get("message", ""), r.get("params") or {}) for r in request.risks
            ],
            change_request=request,
        )
    revision = change.revision.number if changes and change.revision is not None else None
    return ImportResult(diff=lines, changed=bool(changes), revision=revision)


def _removal_notes(changes: list[RecordChange]) -> dict[tuple[str, str], str]:
    """What the apps built on rules say they lose with the points the import deletes (agents' access)."""
    removed = [c.key for c in changes if c.kind == "point" and c.action == "remove"]
    if not removed:
        return {}
    notes: dict[tuple[str, str], str] = {}
    for answer in point_removal_notes.ask(keys=removed):
        for key, note in (answer or {}).items():
            notes[("point", key)] = note
    return notes


@contextmanager
def _refusal(label: str) -> Iterator[None]:
    """Turn a record the models or the database refuse into a ``ConfigError`` that names the record."""
    try:
        yield
    except ValidationError as exc:
        raise ConfigError([f"{label}: {message}" for message in _messages(exc)]) from exc
    except IntegrityError as exc:  # includes ProtectedError: something outside the configuration uses it
        raise ConfigError([f"{label}: the database refused the change: {exc}"]) from exc


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [
            message if name == "__all__" else f"{name}: {message}"
            for name, messages in exc.message_dict.items()
            for message in messages
        ]
    return list(exc.messages)


def _decimal(value: int | float | None) -> Decimal | None:
    # str() of a float is its shortest spelling, the same digits the document shows.
    return None if value is None else Decimal(str(value))


def _moment(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


class _Applier:
    """Writes one diff through the record services, in an order the records' invariants allow."""

    def __init__(self, *, actor: Actor, reason: str) -> None:
        self.actor = actor
        self.reason = reason
        self.keyword_lists: dict[str, KeywordList] = {}
        self.thresholds: dict[str, Threshold] = {}

    def apply(self, document: dict[str, Any], changes: list[RecordChange]) -> None:
        by_kind: dict[tuple[str, str], list[RecordChange]] = defaultdict(list)
        for change in changes:
            by_kind[(change.kind, change.action)].append(change)
        actor, reason = self.actor, self.reason

        # 1. Rules (and points) that go away take their conditions with them, before the keyword
        #    lists and thresholds those conditions use are deleted in step 5.
        removed_points = {c.key for c in by_kind[("point", "remove")]}
        for change in by_kind[("point", "remove")]:
            with _refusal(f"point {change.label}"):
                records.point_delete(point=DecisionPoint.objects.get(key=change.key), actor=actor, reason=reason)
        for change in by_kind[("rule", "remove")]:
            if change.point in removed_points:
                continue
            with _refusal(f"rule {change.label}"):
                rule = Rule.objects.get(point__key=change.point, key=change.key)
                records.rule_delete(rule=rule, actor=actor, reason=reason)

        # 2. Thresholds and keyword lists that rules may now refer to.
        for change in by_kind[("threshold", "add")] + by_kind[("threshold", "change")]:
            self.threshold(change)
        for change in by_kind[("keyword_list", "add")] + by_kind[("keyword_list", "change")]:
            self.keyword_list(change)
        self.keyword_lists = {kl.key: kl for kl in KeywordList.objects.all()}
        self.thresholds = {t.key: t for t in Threshold.objects.all()}

        # 3. State machines the points' outcome → state maps may now refer to.
        for change in by_kind[("machine", "add")] + by_kind[("machine", "change")]:
            self.machine(change)
        # 3b. Tool contracts, which name the machines' states and events.
        for change in by_kind[("tool", "add")] + by_kind[("tool", "change")] + by_kind[("tool", "remove")]:
            self.tool(change)
        # 3c. Upstream MCP servers (their tools are the contracts named ``server.tool``).
        for change in (
            by_kind[("mcp_server", "add")] + by_kind[("mcp_server", "change")] + by_kind[("mcp_server", "remove")]
        ):
            self.mcp_server(change)

        # 4. Points and their rules.
        point_changes = {c.key: c for c in by_kind[("point", "add")] + by_kind[("point", "change")]}
        rule_changes: dict[str, list[RecordChange]] = defaultdict(list)
        for change in by_kind[("rule", "add")] + by_kind[("rule", "change")]:
            rule_changes[change.point].append(change)
        for point_doc in document["points"]:
            key = point_doc["key"]
            if key in point_changes or key in rule_changes:
                self.point(key, point_changes.get(key), rule_changes.get(key, []))

        # 5. Keyword lists, thresholds and machines nothing uses any more.
        for change in by_kind[("keyword_list", "remove")]:
            with _refusal(f"keyword list {change.label}"):
                keyword_list = KeywordList.objects.get(key=change.key)
                records.keyword_list_delete(keyword_list=keyword_list, actor=actor, reason=reason)
        for change in by_kind[("threshold", "remove")]:
            with _refusal(f"threshold {change.label}"):
                threshold = Threshold.objects.get(key=change.key)
                records.threshold_delete(threshold=threshold, actor=actor, reason=reason)

        for change in by_kind[("machine", "remove")]:
            self.machine(change)

    def threshold(self, change: RecordChange) -> None:
        doc = change.new
        assert doc is not None
        with _refusal(f"threshold {change.label}"):
            threshold = (
                Threshold.objects.get(key=change.key) if change.action == "change" else Threshold(key=doc["key"])
            )
            threshold.name = doc.get("name", "")
            threshold.description = doc.get("description", "")
            threshold.value = Decimal(str(doc["value"]))
            threshold.unit = doc.get("unit", "")
            threshold.min_value = _decimal(doc.get("min"))
            threshold.max_value = _decimal(doc.get("max"))
            threshold.high_risk = doc.get("high_risk", False)
            records.threshold_save(threshold=threshold, actor=self.actor, reason=self.reason)

    def keyword_list(self, change: RecordChange) -> None:
        doc = change.new
        assert doc is not None
        actor, reason = self.actor, self.reason
        with _refusal(f"keyword list {change.label}"):
            if change.action == "add":
                keyword_list = KeywordList(key=doc["key"])
                existing: set[str] = set()
            else:
                keyword_list = KeywordList.objects.get(key=change.key)
                # Terms leave first: a switch to regex checks the terms that stay, not the ones that go.
                wanted = set(doc["terms"])
                for term in list(keyword_list.terms.all()):
                    if term.term not in wanted:
                        records.keyword_term_delete(term=term, actor=actor, reason=reason)
                existing = set(keyword_list.terms.values_list("term", flat=True))
            if change.action == "add" or any(f.field != "terms" for f in change.fields):
                keyword_list.name = doc.get("name", "")
                keyword_list.description = doc.get("description", "")
                keyword_list.match_mode = doc["match"]
                keyword_list.fold_traditional = doc.get("fold_traditional", True)
                keyword_list.ignore_cjk_gaps = doc.get("ignore_cjk_gaps", True)
                for option in EVASION_OPTIONS:
                    setattr(keyword_list, option, doc.get(option, EVASION_DEFAULTS[option]))
                records.keyword_list_save(keyword_list=keyword_list, actor=actor, reason=reason)
        for index, term in enumerate(doc["terms"]):
            if term in existing:
                continue
            with _refusal(f"keyword list {change.label} term {index} '{term}'"):
                records.keyword_term_save(
                    term=KeywordTerm(keyword_list=keyword_list, term=term), actor=actor, reason=reason
                )

    def point(self, key: str, change: RecordChange | None, rule_changes: list[RecordChange]) -> None:
        label = f"point {key}"
        with _refusal(label):
            if change is not None and change.action == "add":
                point = DecisionPoint(key=key)
                self.fill_point(point, change)
                records.point_save(point=point, actor=self.actor, reason=self.reason)
            else:
                point = DecisionPoint.objects.get(key=key)
                if change is not None:
                    self.fill_point(point, change)
        # An existing point is saved after its rules: a point's clean() refuses to drop an outcome that
        # a saved rule still uses, while a rule's clean() checks against the point's new outcomes.
        for rule_change in rule_changes:
            self.rule(point, rule_change)
        if change is not None and change.action == "change":
            with _refusal(label):
                records.point_save(point=point, actor=self.actor, reason=self.reason)

    @staticmethod
    def fill_point(point: DecisionPoint, change: RecordChange) -> None:
        doc = change.new
        assert doc is not None
        point.name = doc.get("name", "")
        point.description = doc.get("description", "")
        point.facts = dict(doc.get("facts", {}))
        point.outcomes = list(doc["outcomes"])
        point.candidate_whitelist = list(doc["candidate_whitelist"])
        point.default_outcome = doc["default_outcome"]
        point.no_candidate = doc["when_no_candidate"]
        point.machine = doc.get("machine", "")
        point.state_map = dict(doc.get("state_map", {}))
        point.fallback_state = doc.get("fallback_state", "")
        point.mask_skip = list(doc.get("mask_skip", []))
        point.mask_patterns = dict(doc.get("mask_patterns", {}))
        point.mask_fact_paths = list(doc.get("mask_fact_paths", []))
        point.mask_facts = bool(doc.get("mask_facts", True))
        point.store_raw_output = doc.get("store_raw_output", False) is True

    def rule(self, point: DecisionPoint, change: RecordChange) -> None:
        doc = change.new
        assert doc is not None
        label = f"rule {change.label}"
        with _refusal(label):
            if change.action == "add":
                rule = Rule(point=point, key=change.key)
            else:
                rule = Rule.objects.get(point=point, key=change.key)
                rule.point = point  # the in-memory point: its outcomes and facts are the new ones
            if change.action == "add" or any(f.field != "conditions" for f in change.fields):
                rule.description = doc.get("description", "")
                rule.priority = doc["priority"]
                rule.category = doc["category"]
                rule.combinator = doc["match"]
                rule.mode = doc["mode"]
                rule.outcome = doc["outcome"]
                rule.effective_from = _moment(doc.get("effective_from"))
                rule.effective_until = _moment(doc.get("effective_until"))
                records.rule_save(rule=rule, actor=self.actor, reason=self.reason)
        if change.action == "add" or change.changes("conditions"):
            self.conditions(rule, doc["conditions"], label)

    def conditions(self, rule: Rule, docs: list[dict[str, Any]], label: str) -> None:
        """Make the rule's conditions equal ``docs``, position by position, rewriting only what differs."""
        existing = (
            list(rule.conditions.select_related("keyword_list", "threshold").order_by("position", "id"))
            if rule.pk
            else []
        )
        for position, doc in enumerate(docs):
            with _refusal(f"{label} conditions[{position}]"):
                if position < len(existing):
                    condition = existing[position]
                    if condition.position == position and same(condition_document(condition), doc):
                        continue
                else:
                    condition = Condition()
                condition.rule = rule
                self.fill_condition(condition, doc, position)
                records.condition_save(condition=condition, actor=self.actor, reason=self.reason)
        for position, condition in enumerate(existing[len(docs) :], start=len(docs)):
            with _refusal(f"{label} conditions[{position}]"):
                records.condition_delete(condition=condition, actor=self.actor, reason=self.reason)

    def fill_condition(self, condition: Condition, doc: dict[str, Any], position: int) -> None:
        kind = next(k for k in ADAPTERS if k in doc)
        condition.position = position
        condition.kind = kind
        # Start from a blank condition: a condition that changes kind must not keep the old kind's fields.
        for name, empty in empty_inputs().items():
            setattr(condition, name, empty)
        ADAPTERS[kind].fill(condition, doc, Records(keyword_lists=self.keyword_lists, thresholds=self.thresholds))

    def machine(self, change: RecordChange) -> None:
        with _refusal(f"machine {change.label}"):
            if change.action == "remove":
                machine_delete(machine=StateMachine.objects.get(key=change.key), actor=self.actor, reason=self.reason)
                return
            doc = change.new
            assert doc is not None
            machine = (
                StateMachine.objects.get(key=change.key) if change.action == "change" else StateMachine(key=change.key)
            )
            machine.name = doc.get("name", "")
            machine.description = doc.get("description", "")
            machine.states = list(doc["states"])
            machine.initial_state = doc["initial"]
            machine.handoff_state = doc["handoff"]
            machine.terminal_states = list(doc["terminal"])
            machine.transitions = {state: list(targets) for state, targets in doc["transitions"].items()}
            machine.actions = {state: list(actions) for state, actions in doc.get("actions", {}).items()}
            machine.timeouts = dict(doc.get("timeouts", {}))
            machine.max_anomalies = doc["max_anomalies"]
            machine.fields = [dict(f) for f in doc.get("fields", [])]
            machine.events = [dict(e) for e in doc.get("events", [])]
            machine.guards = dict(doc.get("guards", {}))
            machine_save(machine=machine, actor=self.actor, reason=self.reason)

    def tool(self, change: RecordChange) -> None:
        with _refusal(f"tool {change.label}"):
            if change.action == "remove":
                tool_delete(tool=ToolContract.objects.get(name=change.key), actor=self.actor, reason=self.reason)
                return
            assert change.new is not None
            tool = ToolContract.objects.get(name=change.key) if change.action == "change" else ToolContract()
            tool_save(tool=tool_fill(tool, change.new), actor=self.actor, reason=self.reason)

    def mcp_server(self, change: RecordChange) -> None:
        with _refusal(f"MCP server {change.label}"):
            if change.action == "remove":
                mcp_server_delete(user=self.actor, reason=self.reason, name=change.key)
                return
            assert change.new is not None
            server = McpServer.objects.get(name=change.key) if change.action == "change" else McpServer()
            mcp_server_store(server=mcp_server_fill(server, change.new), actor=self.actor, reason=self.reason)

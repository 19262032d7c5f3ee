"""What is high-risk: which configuration changes wait for a second person's approval.

Pure functions over configuration documents (the shape of ``rules.selectors.config_document``), so the
same answer is given to the configuration-change seam, to ``import_config --dry-run``, to the change
request API and to the admin's "needs approval" notes. Each rule below is tested case by case in
tests/rules/test_risk.py.

A change is high-risk when it
- adds, changes (anything but its description) or deletes a high-risk rule — one in category
  ``compliance`` or ``risk``, or one whose outcome its point maps to its machine's handoff state (the
  rule hands conversations to people) — judged on the rule as it was and as it would be, so turning a
  rule off, to shadow, or out of a high-risk category is high-risk too;
- puts an enforcing rule ahead of a high-risk rule of the same point where it was not ahead before (a
  priority change, a new rule, or a rule switched on): it would decide before the high-risk rule does;
- changes a threshold's value, bounds or high-risk flag when it is or was flagged high-risk, or
  deletes such a threshold;
- changes the terms or the match mode of a keyword list that a high-risk rule uses (before or after),
  or deletes it;
- changes a decision point's outcomes, candidate whitelist, default outcome, machine, state map or
  fallback state, masks less personal data in its log (a built-in mask skipped, an own pattern
  removed or changed, a fact path removed, or its facts no longer masked), or deletes the point;
- changes a state machine's transitions, timeouts, handoff state or model-failure policy
  (``max_anomalies``), or deletes the machine.
Everything else (new points, thresholds, lists and machines, descriptions and names, facts, a new
low-risk rule placed after the high-risk ones, …) applies at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext

from rules.configio.diff import KIND_LABELS, RecordChange

HIGH_RISK_CATEGORIES = frozenset({"compliance", "risk"})
THRESHOLD_FIELDS = frozenset({"value", "min", "max", "high_risk"})
LIST_FIELDS = frozenset(
    {
        "terms",
        "match",
        "fold_traditional",
        "ignore_cjk_gaps",
        "decode_escapes",
        "ignore_invisible",
        "fold_variants",
        "fold_confusables",
        "fold_digits",
        "bridge_cjk",
        "match_pinyin",
    }
)
POINT_FIELDS = frozenset(
    {"outcomes", "candidate_whitelist", "default_outcome", "machine", "state_map", "fallback_state"}
)
MACHINE_FIELDS = frozenset({"transitions", "timeouts", "handoff", "max_anomalies"})


@dataclass(frozen=True)
class RiskReason:
    """Why one record's change needs approval: ``record`` names it as the diff does."""

    record: str
    why: str


def _label(kind: str, key: str, point: str = "") -> str:
    return f"{KIND_LABELS[kind]} {point + '.' if point else ''}{key}"


def handoff_outcomes(point: Mapping[str, Any], machines: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The outcomes ``point`` maps to its machine's handoff state (a person takes the conversation)."""
    machine = machines.get(point.get("machine", ""))
    if machine is None:
        return set()
    return {outcome for outcome, state in point.get("state_map", {}).items() if state == machine.get("handoff")}


def rule_high_risk(rule: Mapping[str, Any], handoff: set[str]) -> str | None:
    """Why a rule is high-risk — its category, or an outcome in ``handoff`` — or None."""
    if rule.get("category") in HIGH_RISK_CATEGORIES:
        return f"a {rule['category']} rule"
    if rule.get("outcome") in handoff:
        return f"its outcome {rule['outcome']} hands the conversation to a person"
    return None


class _View:
    """One side of the change (before or after), indexed for the questions the rules ask."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.thresholds = {t["key"]: t for t in document.get("thresholds", [])}
        self.lists = {kl["key"]: kl for kl in document.get("keyword_lists", [])}
        self.points = {p["key"]: p for p in document.get("points", [])}
        self.machines = {m["key"]: m for m in document.get("machines", [])}

    def rule(self, point: str, key: str) -> dict[str, Any] | None:
        found = self.points.get(point)
        return next((r for r in found.get("rules", []) if r["key"] == key), None) if found else None

    def handoff_outcomes(self, point: Mapping[str, Any]) -> set[str]:
        return handoff_outcomes(point, self.machines)

    def rule_risk(self, point_key: str, rule: Mapping[str, Any] | None) -> str | None:
        """Why ``rule`` (of ``point_key``, on this side) is high-risk, or None."""
        if rule is None:
            return None
        point = self.points.get(point_key)
        return rule_high_risk(rule, self.handoff_outcomes(point) if point is not None else set())

    def high_risk_rules(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            (point_key, rule)
            for point_key, point in self.points.items()
            for rule in point.get("rules", [])
            if self.rule_risk(point_key, rule)
        ]

    def lists_of(self, rules: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        """Keyword list key → the first high-risk rule (``point.rule``) that uses it."""
        used: dict[str, str] = {}
        for point_key, rule in rules:
            for condition in rule.get("conditions", []):
                key = condition.get("input_contains")
                if isinstance(key, str):
                    used.setdefault(key, f"{point_key}.{rule['key']}")
        return used

    def ahead(self, point_key: str) -> set[tuple[str, str]]:
        """(enforcing rule, high-risk rule) pairs of the point where the first decides before the second."""
        point = self.points.get(point_key)
        if point is None:
            return set()
        order = sorted(point.get("rules", []), key=lambda r: (r["priority"], r["key"]))
        pairs: set[tuple[str, str]] = set()
        for index, rule in enumerate(order):
            if not self.rule_risk(point_key, rule) or rule.get("mode", "enforce") == "off":
                continue
            for earlier in order[:index]:
                if earlier.get("mode", "enforce") == "enforce" and not self.rule_risk(point_key, earlier):
                    pairs.add((earlier["key"], rule["key"]))
        return pairs


def _unmasks(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    skipped = set(after.get("mask_skip", [])) - set(before.get("mask_skip", []))
    old_patterns, new_patterns = before.get("mask_patterns", {}), after.get("mask_patterns", {})
    weakened = [name for name, pattern in old_patterns.items() if new_patterns.get(name) != pattern]
    paths_dropped = set(before.get("mask_fact_paths", [])) - set(after.get("mask_fact_paths", []))
    facts_unmasked = before.get("mask_facts", True) and not after.get("mask_facts", True)
    return bool(skipped or weakened or paths_dropped or facts_unmasked)


def change_risks(
    before: Mapping[str, Any], after: Mapping[str, Any], changes: Iterable[RecordChange]
) -> list[RiskReason]:
    """Every reason the change from ``before`` to ``after`` needs approval; empty when it applies at once."""
    old, new = _View(before), _View(after)
    reasons: list[RiskReason] = []
    changes = list(changes)
    risky_lists = {**new.lists_of(new.high_risk_rules()), **old.lists_of(old.high_risk_rules())}
    points_with_rule_changes: set[str] = set()
    for change in changes:
        fields = {f.field for f in change.fields}
        label = _label(change.kind, change.key, change.point)

        def add(why: str, label: str = label) -> None:
            reasons.append(RiskReason(label, why))

        if change.kind == "threshold":
            flagged = bool((change.old or {}).get("high_risk")) or bool((change.new or {}).get("high_risk"))
            if change.action == "remove" and (change.old or {}).get("high_risk"):
                add("deletes a high-risk threshold")
            elif change.action == "change" and flagged and fields & THRESHOLD_FIELDS:
                add(f"changes {', '.join(sorted(fields & THRESHOLD_FIELDS))} of a high-risk threshold")
        elif change.kind == "keyword_list":
            user = risky_lists.get(change.key)
            if user is None:
                continue
            if change.action == "remove":
                add(f"deletes a keyword list the high-risk rule {user} uses")
            elif change.action == "change" and fields & LIST_FIELDS:
                add(
                    f"changes the {' and '.join(sorted(fields & LIST_FIELDS))} of a list the high-risk rule {user} uses"
                )
        elif change.kind == "rule":
            points_with_rule_changes.add(change.point)
            was = old.rule_risk(change.point, change.old)
            now = new.rule_risk(change.point, change.new)
            if change.action == "add" and now:
                add(f"adds a high-risk rule ({now})")
            elif change.action == "remove" and was:
                add(f"deletes a high-risk rule ({was})")
            elif change.action == "change" and (was or now) and fields - {"description"}:
                add(f"changes {', '.join(sorted(fields - {'description'}))} of a high-risk rule ({was or now})")
        elif change.kind == "point":
            if change.action == "remove":
                add("deletes a decision point")
            elif change.action == "change":
                if fields & POINT_FIELDS:
                    add(f"changes the point's {', '.join(sorted(fields & POINT_FIELDS))}")
                if change.old is not None and change.new is not None and _unmasks(change.old, change.new):
                    add("masks less personal data in the decision log")
            if change.action != "add":
                points_with_rule_changes.add(change.key)
        elif change.kind == "machine":
            if change.action == "remove":
                add("deletes a state machine")
            elif change.action == "change" and fields & MACHINE_FIELDS:
                add(f"changes the machine's {', '.join(sorted(fields & MACHINE_FIELDS))}")
    # A rule that now decides before a high-risk rule it did not precede (whatever changed to cause it).
    # A high-risk rule that is new, or newly high-risk, is flagged itself above: the rules before it are
    # not a change in what may preempt it.
    for point_key in sorted(points_with_rule_changes):
        for earlier, high in sorted(new.ahead(point_key) - old.ahead(point_key)):
            if not old.rule_risk(point_key, old.rule(point_key, high)):
                continue
            reasons.append(
                RiskReason(
                    _label("rule", earlier, point_key),
                    f"now decides before the high-risk rule {point_key}.{high}",
                )
            )
    return reasons


def record_approval_note(kind: str, key: str, document: Mapping[str, Any], point: str = "") -> str | None:
    """For the admin: which changes to this record (as the live document has it) need approval."""
    view = _View(document)
    if kind == "threshold":
        found = view.thresholds.get(key)
        if found and found.get("high_risk"):
            return gettext("High-risk threshold: changing its value, its bounds or its high-risk flag needs approval.")
        return None
    if kind == "keyword_list":
        user = view.lists_of(view.high_risk_rules()).get(key)
        if user:
            return gettext(
                "Used by the high-risk rule %(rule)s: changing its terms, its match mode or its evasion options "
                "needs approval."
            ) % {"rule": user}
        return None
    if kind == "rule":
        why = view.rule_risk(point, view.rule(point, key))
        if why:
            return gettext("High-risk rule (%(why)s): any change but its description needs approval.") % {"why": why}
        return gettext("Placing this rule (or switching it on) ahead of a high-risk rule of its point needs approval.")
    if kind == "point":
        return gettext(
            "Changing the outcomes, candidate whitelist, default outcome, machine, state map or fallback state, "
            "masking less personal data, or deleting the point needs approval."
        )
    if kind == "machine":
        return gettext(
            "Changing the transitions, timeouts, handoff state or max anomalies, or deleting it, needs approval."
        )
    return None

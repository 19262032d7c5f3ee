"""What is high-risk: which configuration changes wait for a second person's approval.

Pure functions over configuration documents (the shape of ``rules.config.selectors.config_document``), so the
same answer is given to the configuration-change seam, to ``import_config --dry-run``, to the change
request API and to the admin's "needs approval" notes. Each rule below is tested case by case in
tests/rules/governance/test_risk.py, and a property test there checks the whole by its effect.

The principle: **anything that can change what a high-risk rule decides, or whether it is reached, is
high-risk.** A high-risk rule is one in category ``compliance`` or ``risk``, or one whose outcome its
point maps to its machine's handoff state (it hands the conversation to a person). A rule of the same
point that decides before it (enforcing, ahead of it in priority order) is one it may never be reached
past, so it is governed as the high-risk rule is. Concretely a change is high-risk when it
- adds, changes (anything but its description) or deletes a high-risk rule, or an enforcing rule that
  decides before a high-risk rule of its point — its mode, priority, conditions, outcome, dates alike;
- changes a threshold or keyword list such a rule uses (a threshold's value, bounds or flag; a list's
  terms, match mode or evasion options), or any threshold flagged ``high_risk``, or deletes one;
- changes what decides around the rules at a point: its outcomes, candidate whitelist, default outcome,
  ``when_no_candidate``, machine, state map, fallback state or the type of a declared fact; masks less
  personal data in its log (a built-in mask skipped, an own pattern removed or changed, a fact path
  removed, or its facts no longer masked); or deletes the point;
- changes a state machine's transitions, per-state actions, timeouts, initial, terminal or handoff
  state or model-failure policy (``max_anomalies``), or deletes the machine; or changes its field
  declarations so that less personal data is masked (``pii`` turned off, a ``pii`` field removed) or a
  field required in a state a high-risk rule sends sessions to changes (``field_risk.py`` says why); or
  removes or weakens a guard on a move into such a state (``guard_risk.py``);
- changes a write or destructive tool's schemas, error policy, risk or approval states, or deletes its
  contract (``tool_risk.py``);
- changes the URL or authentication of an upstream MCP server that has a write or destructive tool,
  enables such a server, or deletes it (``mcp_server_risk.py``).
Every record is judged on both sides — as it was and as it would be — so switching a rule on ahead of a
high-risk rule, turning one off, or moving a rule out of a high-risk category is high-risk too.
Everything else (new points, thresholds, lists and machines; descriptions and names; new facts; rules
that decide only after every high-risk rule of their point, and the lists and thresholds only they use;
a new list or threshold — the rule that starts using it is judged itself) applies at once.
A point's ``store_raw_output`` applies at once either way: it changes no decision, and the raw output it
keeps is masked as the input always is (it masks nothing less, it keeps one more masked text).

A reason is kept as an English message id with its parameters (``RiskReason.message`` / ``params``) as
well as its English sentence (``why``, for the API, logs and ``import_config``): the admin renders the
stored message in the reader's language (``risk_reason_text``); rows stored before that have only ``why``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext, gettext_noop

from rules.config.document.diff import KIND_LABELS, RecordChange
from rules.engine.evasion import EVASION_OPTIONS
from rules.governance.field_risk import field_risks
from rules.governance.guard_risk import guard_risks
from rules.governance.mcp_server_risk import mcp_server_approval_note, mcp_server_risks
from rules.governance.tool_risk import tool_approval_note, tool_risks

HIGH_RISK_CATEGORIES = frozenset({"compliance", "risk"})
THRESHOLD_FIELDS = frozenset({"value", "min", "max", "high_risk"})
# Every evasion option is a change of what the list matches: the engine's own list of them, so a new
# option is governed the day it is added.
LIST_FIELDS = frozenset({"terms", "match", "fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS})
POINT_FIELDS = frozenset(
    {
        "outcomes",
        "candidate_whitelist",
        "default_outcome",
        "when_no_candidate",
        "machine",
        "state_map",
        "fallback_state",
    }
)
MACHINE_FIELDS = frozenset({"transitions", "actions", "timeouts", "handoff", "initial", "terminal", "max_anomalies"})

# A reason's parameters: text, or a nested reason (``{"message": …, "params": …}``) rendered in its place.
Params = Mapping[str, Any]


def _render(message: str, params: Params, translate: bool) -> str:
    values = {
        name: _render(value["message"], value.get("params", {}), translate) if isinstance(value, Mapping) else value
        for name, value in params.items()
    }
    return (gettext(message) if translate else message) % values


@dataclass(frozen=True)
class RiskReason:
    """Why one record's change needs approval: ``record`` names it as the diff does; ``why`` is the English
    sentence, ``message`` and ``params`` what it is rendered from (empty for a reason read back from a row
    stored before they were kept)."""

    record: str
    why: str
    message: str = ""
    params: Params = field(default_factory=dict)

    @classmethod
    def of(cls, record: str, message: str, **params: Any) -> RiskReason:
        return cls(record, _render(message, params, translate=False), message, params)

    def document(self) -> dict[str, Any]:
        """As a change request stores it (``ChangeRequest.risks``)."""
        doc: dict[str, Any] = {"record": self.record, "why": self.why}
        if self.message:
            doc.update(message=self.message, params=dict(self.params))
        return doc


def risk_reason_text(stored: Mapping[str, Any]) -> str:
    """A stored reason in the active language; a row without a message id (or one this code no longer
    renders) reads as its stored English sentence."""
    message = stored.get("message")
    if isinstance(message, str) and message:
        try:
            return _render(message, stored.get("params") or {}, translate=True)
        except (KeyError, TypeError, ValueError):
            pass
    return str(stored.get("why", ""))


def _label(kind: str, key: str, point: str = "") -> str:
    return f"{KIND_LABELS[kind]} {point + '.' if point else ''}{key}"


def handoff_outcomes(point: Mapping[str, Any], machines: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The outcomes ``point`` maps to its machine's handoff state (a person takes the conversation)."""
    machine = machines.get(point.get("machine", ""))
    if machine is None:
        return set()
    return {outcome for outcome, state in point.get("state_map", {}).items() if state == machine.get("handoff")}


def rule_risk_message(rule: Mapping[str, Any], handoff: set[str]) -> dict[str, Any] | None:
    """Why a rule is high-risk, as a message id and its parameters (see ``risk_reason_text``), or None."""
    if rule.get("category") in HIGH_RISK_CATEGORIES:
        category = (
            gettext_noop("a compliance rule") if rule["category"] == "compliance" else gettext_noop("a risk rule")
        )
        return {"message": category, "params": {}}
    if rule.get("outcome") in handoff:
        message = gettext_noop("its outcome %(outcome)s hands the conversation to a person")
        return {"message": message, "params": {"outcome": rule["outcome"]}}
    return None


def rule_high_risk(rule: Mapping[str, Any], handoff: set[str]) -> str | None:
    """Why a rule is high-risk — its category, or an outcome in ``handoff`` — in English, or None."""
    why = rule_risk_message(rule, handoff)
    return _render(why["message"], why["params"], translate=False) if why else None


def document_strings(value: Any) -> Iterator[str]:
    """Every string inside a document value: the keys of the lists and thresholds conditions name."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from document_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from document_strings(item)


@dataclass(frozen=True, slots=True)
class _Use:
    """Who makes a threshold or list matter: ``rule`` (``point.rule``) is high-risk itself (``before`` is
    empty) or decides before the high-risk rule ``before``."""

    rule: str
    before: str = ""


class _Point:
    """One point of one side: which rules are high-risk, and which decide before one (``guards``)."""

    def __init__(self, key: str, point: Mapping[str, Any], handoff: set[str]) -> None:
        self.key = key
        self.rules = {r["key"]: r for r in point.get("rules", [])}
        self.risk = {k: why for k, r in self.rules.items() if (why := rule_risk_message(r, handoff))}
        # One pass from the last rule back: the nearest high-risk rule (not off) at or after each place.
        # O(n log n) for the sort, so a 200-rule point costs next to nothing on every change.
        order = sorted(self.rules.values(), key=lambda r: (int(r["priority"]), r["key"]))
        self.guards: dict[str, str] = {}
        nearest = ""
        for rule in reversed(order):
            if rule["key"] in self.risk:
                if rule.get("mode", "enforce") != "off":
                    nearest = rule["key"]
            elif nearest and rule.get("mode", "enforce") == "enforce":
                self.guards[rule["key"]] = nearest


class _View:
    """One side of the change (before or after), indexed for the questions the rules ask."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.thresholds = {t["key"]: t for t in document.get("thresholds", [])}
        self.lists = {kl["key"]: kl for kl in document.get("keyword_lists", [])}
        self.points = {p["key"]: p for p in document.get("points", [])}
        self.machines = {m["key"]: m for m in document.get("machines", [])}
        self.tools = {t["name"]: t for t in document.get("tools", [])}
        self._indexed: dict[str, _Point] = {}
        self._uses: dict[str, _Use] | None = None

    def rule(self, point: str, key: str) -> dict[str, Any] | None:
        found = self.points.get(point)
        return next((r for r in found.get("rules", []) if r["key"] == key), None) if found else None

    def handoff_outcomes(self, point: Mapping[str, Any]) -> set[str]:
        return handoff_outcomes(point, self.machines)

    def point(self, key: str) -> _Point | None:
        if key not in self._indexed:
            found = self.points.get(key)
            if found is None:
                return None
            self._indexed[key] = _Point(key, found, self.handoff_outcomes(found))
        return self._indexed[key]

    def rule_risk(self, point_key: str, rule: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """Why ``rule`` (of ``point_key``, on this side) is high-risk, or None."""
        if rule is None:
            return None
        point = self.points.get(point_key)
        return rule_risk_message(rule, self.handoff_outcomes(point) if point is not None else set())

    def routed_states(self, machine_key: str) -> set[str]:
        """The states of ``machine_key`` a high-risk rule (not off) sends sessions to, through its point's state map."""
        states: set[str] = set()
        for point_key, point in self.points.items():
            if point.get("machine") != machine_key:
                continue
            indexed = self.point(point_key)
            assert indexed is not None
            for rule_key in indexed.risk:
                rule = indexed.rules[rule_key]
                if rule.get("mode", "enforce") != "off" and rule.get("outcome") in point.get("state_map", {}):
                    states.add(point["state_map"][rule["outcome"]])
        return states

    def fields_read(self, machine_key: str) -> dict[str, str]:
        """The fields of ``machine_key`` that a high-risk rule (not off), or a rule deciding before one, of its
        points reads (``session_field``) → the first such rule (``point.rule``)."""
        read: dict[str, str] = {}
        for point_key, point in self.points.items():
            indexed = self.point(point_key) if point.get("machine") == machine_key else None
            if indexed is None:
                continue
            for rule_key, rule in indexed.rules.items():
                if rule.get("mode", "enforce") == "off" or not (rule_key in indexed.risk or rule_key in indexed.guards):
                    continue
                for c in rule.get("conditions", []):
                    if isinstance(c, Mapping) and isinstance(name := c.get("session_field"), str):
                        read.setdefault(name, f"{point_key}.{rule_key}")
        return read

    def guarded(self, point_key: str, rule_key: str) -> str:
        """The high-risk rule that ``rule_key`` decides before (the nearest), or ``""``."""
        point = self.point(point_key)
        return point.guards.get(rule_key, "") if point is not None else ""

    def uses(self) -> dict[str, _Use]:
        """Threshold and list keys → the first rule that makes them matter (a high-risk rule preferred)."""
        if self._uses is None:
            used: dict[str, _Use] = {}
            guarded: dict[str, _Use] = {}
            for point_key in self.points:
                point = self.point(point_key)
                assert point is not None
                for rule_key, rule in point.rules.items():
                    if rule_key in point.risk:
                        into, use = used, _Use(f"{point_key}.{rule_key}")
                    elif rule_key in point.guards:
                        into, use = guarded, _Use(f"{point_key}.{rule_key}", f"{point_key}.{point.guards[rule_key]}")
                    else:
                        continue
                    for key in document_strings(rule.get("conditions", [])):
                        if key in self.thresholds or key in self.lists:
                            into.setdefault(key, use)
            self._uses = {**guarded, **used}
        return self._uses


def _unmasks(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    skipped = set(after.get("mask_skip", [])) - set(before.get("mask_skip", []))
    old_patterns, new_patterns = before.get("mask_patterns", {}), after.get("mask_patterns", {})
    weakened = [name for name, pattern in old_patterns.items() if new_patterns.get(name) != pattern]
    paths_dropped = set(before.get("mask_fact_paths", [])) - set(after.get("mask_fact_paths", []))
    facts_unmasked = before.get("mask_facts", True) and not after.get("mask_facts", True)
    return bool(skipped or weakened or paths_dropped or facts_unmasked)


def _retyped_facts(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Declared facts whose type changed. A new fact is read by no rule yet; a removed one by none any more
    (a point may not drop a fact its rules read), so neither changes a decision."""
    old, new = before.get("facts") or {}, after.get("facts") or {}
    return sorted(name for name, kind in old.items() if name in new and new[name] != kind)


# Long on purpose: one record's risks are judged kind by kind (thresholds and keyword lists, rules, …),
# each branch short, all sharing the before/after pair; the branches are the list of what is high-risk.
def _record_risks(change: RecordChange, old: _View, new: _View) -> Iterator[RiskReason]:
    """The reasons one record's change needs approval (see the module docstring)."""
    fields = {f.field for f in change.fields}
    label = _label(change.kind, change.key, change.point)

    def reason(message: str, **params: Any) -> RiskReason:
        return RiskReason.of(label, message, **params)

    if change.kind in ("threshold", "keyword_list"):
        is_threshold = change.kind == "threshold"
        watched = fields & (THRESHOLD_FIELDS if is_threshold else LIST_FIELDS)
        flagged = is_threshold and (
            bool((change.old or {}).get("high_risk")) or bool((change.new or {}).get("high_risk"))
        )
        use = {**new.uses(), **old.uses()}.get(change.key)
        if change.action == "add" or (change.action == "change" and not watched):
            return
        if flagged:  # named as flagged first: that is what its admin page and the author see
            if change.action == "remove":
                yield reason(gettext_noop("deletes a high-risk threshold"))
            else:
                yield reason(
                    gettext_noop("changes %(fields)s of a high-risk threshold"), fields=", ".join(sorted(watched))
                )
            return
        if use is None:
            return
        what = {"fields": ", ".join(sorted(watched))} if is_threshold else {"fields": " and ".join(sorted(watched))}
        messages = {
            # (threshold?, removed?, used by a high-risk rule?) → message
            (True, True, True): gettext_noop("deletes a threshold the high-risk rule %(rule)s uses"),
            (True, True, False): gettext_noop(
                "deletes a threshold the rule %(rule)s uses, which decides before the high-risk rule %(before)s"
            ),
            (True, False, True): gettext_noop("changes %(fields)s of a threshold the high-risk rule %(rule)s uses"),
            (True, False, False): gettext_noop(
                "changes %(fields)s of a threshold the rule %(rule)s uses, which decides before the high-risk "
                "rule %(before)s"
            ),
            (False, True, True): gettext_noop("deletes a keyword list the high-risk rule %(rule)s uses"),
            (False, True, False): gettext_noop(
                "deletes a keyword list the rule %(rule)s uses, which decides before the high-risk rule %(before)s"
            ),
            (False, False, True): gettext_noop("changes the %(fields)s of a list the high-risk rule %(rule)s uses"),
            (False, False, False): gettext_noop(
                "changes the %(fields)s of a list the rule %(rule)s uses, which decides before the high-risk "
                "rule %(before)s"
            ),
        }
        removed = change.action == "remove"
        params = {"rule": use.rule, **({} if removed else what), **({"before": use.before} if use.before else {})}
        yield reason(messages[(is_threshold, removed, not use.before)], **params)
    elif change.kind == "rule":
        was, now = old.rule_risk(change.point, change.old), new.rule_risk(change.point, change.new)
        edited = sorted(fields - {"description"})
        if change.action == "add" and now:
            yield reason(gettext_noop("adds a high-risk rule (%(why)s)"), why=now)
        elif change.action == "remove" and was:
            yield reason(gettext_noop("deletes a high-risk rule (%(why)s)"), why=was)
        elif change.action == "change" and (was or now) and edited:
            yield reason(
                gettext_noop("changes %(fields)s of a high-risk rule (%(why)s)"),
                fields=", ".join(edited),
                why=was or now,
            )
        elif not (was or now):
            before = new.guarded(change.point, change.key) if change.action != "remove" else ""
            before = before or (old.guarded(change.point, change.key) if change.action != "add" else "")
            if not before:
                return
            high = f"{change.point}.{before}"
            if change.action == "add":
                yield reason(gettext_noop("adds a rule that decides before the high-risk rule %(before)s"), before=high)
            elif change.action == "remove":
                yield reason(
                    gettext_noop("deletes a rule that decided before the high-risk rule %(before)s"), before=high
                )
            elif edited:
                yield reason(
                    gettext_noop("changes %(fields)s of a rule that decides before the high-risk rule %(before)s"),
                    fields=", ".join(edited),
                    before=high,
                )
    elif change.kind == "point":
        if change.action == "remove":
            yield reason(gettext_noop("deletes a decision point"))
        elif change.action == "change":
            if fields & POINT_FIELDS:
                yield reason(
                    gettext_noop("changes the point's %(fields)s"), fields=", ".join(sorted(fields & POINT_FIELDS))
                )
            if change.old is not None and change.new is not None:
                retyped = _retyped_facts(change.old, change.new)
                if retyped:
                    yield reason(gettext_noop("changes the type of the fact %(facts)s"), facts=", ".join(retyped))
                if _unmasks(change.old, change.new):
                    yield reason(gettext_noop("masks less personal data in the decision log"))
    elif change.kind == "machine":
        yield from (reason(message, **params) for message, params in _machine_risks(change, fields, old, new))
    elif change.kind == "tool":
        yield from (reason(message, **params) for message, params in tool_risks(change))
    elif change.kind == "mcp_server":
        yield from (reason(message, **params) for message, params in mcp_server_risks(change, old.tools, new.tools))


def _machine_risks(
    change: RecordChange, fields: set[str], old: _View, new: _View
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A machine change's reasons, as (message id, params)."""
    if change.action == "remove":
        yield gettext_noop("deletes a state machine"), {}
    elif change.action == "change":
        if fields & MACHINE_FIELDS:
            yield (
                gettext_noop("changes the machine's %(fields)s"),
                {"fields": ", ".join(sorted(fields & MACHINE_FIELDS))},
            )
        if change.old is None or change.new is None:
            return
        routed = old.routed_states(change.key) | new.routed_states(change.key)
        if "fields" in fields:
            read = {**new.fields_read(change.key), **old.fields_read(change.key)}
            yield from field_risks(change.old.get("fields", []), change.new.get("fields", []), routed, read)
        if fields & {"events", "guards"}:
            yield from guard_risks(change.old, change.new, routed)


def change_risks(
    before: Mapping[str, Any], after: Mapping[str, Any], changes: Iterable[RecordChange]
) -> list[RiskReason]:
    """Every reason the change from ``before`` to ``after`` needs approval; empty when it applies at once."""
    old, new = _View(before), _View(after)
    return [reason for change in changes for reason in _record_risks(change, old, new)]


def record_approval_note(kind: str, key: str, document: Mapping[str, Any], point: str = "") -> str | None:
    """For the admin: which changes to this record (as the live document has it) need approval."""
    view = _View(document)
    use = view.uses().get(key) if kind in ("threshold", "keyword_list") else None
    if kind == "threshold":
        found = view.thresholds.get(key)
        if found and found.get("high_risk"):
            return gettext("High-risk threshold: changing its value, its bounds or its high-risk flag needs approval.")
        if use is not None and not use.before:
            return gettext(
                "Used by the high-risk rule %(rule)s: changing its value, its bounds or its high-risk flag needs "
                "approval."
            ) % {"rule": use.rule}
        if use is not None:
            return gettext(
                "Used by the rule %(rule)s, which decides before the high-risk rule %(before)s: changing its "
                "value, its bounds or its high-risk flag needs approval."
            ) % {"rule": use.rule, "before": use.before}
        return None
    if kind == "keyword_list":
        if use is not None and not use.before:
            return gettext(
                "Used by the high-risk rule %(rule)s: changing its terms, its match mode or its evasion options "
                "needs approval."
            ) % {"rule": use.rule}
        if use is not None:
            return gettext(
                "Used by the rule %(rule)s, which decides before the high-risk rule %(before)s: changing its "
                "terms, its match mode or its evasion options needs approval."
            ) % {"rule": use.rule, "before": use.before}
        return None
    if kind == "rule":
        why = view.rule_risk(point, view.rule(point, key))
        if why:
            return gettext("High-risk rule (%(why)s): any change but its description needs approval.") % {
                "why": _render(why["message"], why["params"], translate=True)
            }
        before = view.guarded(point, key)
        if before:
            return gettext(
                "Decides before the high-risk rule %(before)s: any change but its description needs approval."
            ) % {"before": f"{point}.{before}"}
        return gettext("Placing this rule (or switching it on) ahead of a high-risk rule of its point needs approval.")
    if kind == "point":
        return gettext(
            "Changing the outcomes, candidate whitelist, default outcome, what happens without a candidate, "
            "machine, state map, fallback state or a fact's type, masking less personal data, or deleting the "
            "point needs approval."
        )
    if kind == "machine":
        return gettext(
            "Changing the transitions, actions, timeouts, initial, terminal or handoff state or max anomalies, "
            "turning a field's pii off, changing a field required in a state a high-risk rule sends sessions to, "
            "removing or weakening a guard into such a state, "
            "or deleting it, needs approval."
        )
    if kind == "tool":
        return tool_approval_note(next((t for t in document.get("tools", []) if t["name"] == key), None))
    if kind == "mcp_server":
        return mcp_server_approval_note(key, view.tools)
    return None

"""What the configuration says about a decision point, read statically: how well it is governed, and which
of its rules can never win.

Pure functions over the configuration document (the shape of ``rules.config.selectors.config_document``), as
``rules.governance.risk`` is, so the same answers can be given for the live configuration, a revision's snapshot or
a YAML file. No Django.

Governance (``point_governance``) — one of
- ``naked``: a candidate can be accepted unguarded: the point's whitelist is not empty and no enforcing
  rule in effect tests the candidate's confidence against a threshold;
- ``partial``: guarded, but with a gap: the confidence is tested only together with other conditions,
  the whitelist admits every outcome or an outcome of a high-risk rule, no high-risk (compliance or
  risk, or hand-off) rule enforces at the point, or one of its high-risk rules does not decide (shadow,
  off, or outside its effective dates);
- ``controlled``: none of the above — high-risk branches are covered by enforcing hard rules, and a
  candidate is accepted only from the whitelist and only above a confidence threshold (or never, when
  the whitelist is empty).
``reasons`` spells out every finding, gaps first.

Shadowed rules (``shadowed_rules``): a rule (enforcing or shadow) that can never win because an
enforcing rule before it always holds whenever it does. Decided statically where it can be: rule B
implies rule A when each of A's conditions (for ``all``; one of them for ``any``) is implied by one of
B's (all of B's, for ``any``), where a condition implies another when it is the same, or a narrower form
of it — a keyword list whose every term contains a term of a wider list of the same match mode, a lower
confidence threshold, a subset of outcomes or states, a stronger comparison of the same fact. A rule
without conditions always holds. Anything else (time windows, regular expressions) is only recognised
when identical; an undecided pair is never reported.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rules.engine.evasion import EVASION_OPTIONS, is_numeric
from rules.governance.risk import handoff_outcomes, rule_high_risk

CONTROLLED = "controlled"
PARTIAL = "partial"
NAKED = "naked"
GOVERNANCE_KINDS = (CONTROLLED, PARTIAL, NAKED)

CONFIDENCE = "candidate_confidence_below"


def gettext_noop(message: str) -> str:
    """Marks ``message`` for the translation catalogue (makemessages looks for this name); no Django here."""
    return message


class Reason(str):
    """A finding in English (what the API and the snapshots show), that also remembers its message and
    values so that the admin can show it in the operator's language (``gettext(r.msgid) % r.params``)."""

    msgid: str
    params: dict[str, Any]

    def __new__(cls, msgid: str, **params: Any) -> Reason:
        made = super().__new__(cls, msgid % params if params else msgid)
        made.msgid = msgid
        made.params = params
        return made


@dataclass(frozen=True)
class Governance:
    kind: str  # controlled | partial | naked
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Shadowed:
    """``key`` can never win: ``by`` (enforcing, earlier) holds whenever it does."""

    key: str
    by: str
    why: str


class _Config:
    """The parts of the document a point's rules refer to: thresholds, keyword lists, machines."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.thresholds = {t["key"]: t for t in document.get("thresholds", [])}
        self.lists = {kl["key"]: kl for kl in document.get("keyword_lists", [])}
        self.machines = {m["key"]: m for m in document.get("machines", [])}

    def threshold_value(self, key: Any) -> float | None:
        found = self.thresholds.get(key) if isinstance(key, str) else None
        return None if found is None else float(found["value"])

    def handoff_outcomes(self, point: Mapping[str, Any]) -> set[str]:
        return handoff_outcomes(point, self.machines)


def _when(value: Any) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def rule_in_effect(rule: Mapping[str, Any], now: dt.datetime) -> bool:
    """Whether ``now`` is within the rule's effective dates (either end may be open)."""
    start, end = _when(rule.get("effective_from")), _when(rule.get("effective_until"))
    return (start is None or start <= now) and (end is None or now < end)


def _confidence_guard(rule: Mapping[str, Any]) -> str | None:
    """ "full" when the rule holds whenever the confidence is below its threshold, "conditional" when only
    together with other conditions, None when it does not test the confidence."""
    conditions = rule.get("conditions", [])
    tests = [c for c in conditions if CONFIDENCE in c]
    if not tests:
        return None
    if rule.get("match", "all") == "any" or len(tests) == len(conditions):
        return "full"
    return "conditional"


def _names(items: Sequence[str]) -> str:
    return ", ".join(items)


# Long on purpose: one walk over a point's rules that gathers every governance fact the report shows
# (docs/report.md), in the report's order.
def point_governance(point: Mapping[str, Any], document: Mapping[str, Any], *, now: dt.datetime) -> Governance:
    """How well ``point`` (one point of ``document``) is governed at ``now``; see the module docstring."""
    config = _Config(document)
    handoff = config.handoff_outcomes(point)
    rules = sorted(point.get("rules", []), key=lambda r: (r["priority"], r["key"]))
    deciding = [r for r in rules if r.get("mode", "enforce") == "enforce" and rule_in_effect(r, now)]
    naked: list[str] = []
    gaps: list[str] = []
    fine: list[str] = []

    whitelist = list(point.get("candidate_whitelist", []))
    outcomes = list(point.get("outcomes", []))
    if not whitelist:
        fine.append(Reason(gettext_noop("no candidate is ever accepted: the candidate whitelist is empty")))
    else:
        guards = [(r, kind) for r in deciding if (kind := _confidence_guard(r))]
        full = [r for r, kind in guards if kind == "full"]
        if full:
            r = full[0]
            key = next(c[CONFIDENCE] for c in r.get("conditions", []) if CONFIDENCE in c)
            value = config.threshold_value(key)
            shown = f"{key} ({value:g})" if value is not None else key
            fine.append(
                Reason(
                    gettext_noop(
                        "a candidate is accepted only from the whitelist (%(whitelist)s) "
                        "and only at a confidence of at least %(threshold)s: rule %(rule)s"
                    ),
                    whitelist=_names(whitelist),
                    threshold=shown,
                    rule=r["key"],
                )
            )
        elif guards:
            gaps.append(
                Reason(
                    gettext_noop(
                        "the candidate's confidence is tested only together with other conditions "
                        "(rule %(rules)s): a candidate from the whitelist (%(whitelist)s) is otherwise "
                        "accepted at any confidence"
                    ),
                    rules=_names([r["key"] for r, _ in guards]),
                    whitelist=_names(whitelist),
                )
            )
        else:
            idle = [r["key"] for r in rules if _confidence_guard(r) and r not in deciding]
            text = (
                gettext_noop(
                    "a candidate from the whitelist (%(whitelist)s) is accepted at any confidence: no "
                    "enforcing rule tests the candidate's confidence against a threshold (rule %(rules)s "
                    "tests it but does not decide)"
                )
                if idle
                else gettext_noop(
                    "a candidate from the whitelist (%(whitelist)s) is accepted at any confidence: no "
                    "enforcing rule tests the candidate's confidence against a threshold"
                )
            )
            naked.append(Reason(text, whitelist=_names(whitelist), **({"rules": _names(idle)} if idle else {})))
        if outcomes and set(outcomes) <= set(whitelist):
            gaps.append(Reason(gettext_noop("the candidate whitelist admits every outcome of the point")))
        risky_outcomes = {
            r["outcome"]: r["key"] for r in rules if rule_high_risk(r, handoff) and r.get("outcome") in whitelist
        }
        for outcome, key in sorted(risky_outcomes.items()):
            gaps.append(
                Reason(
                    gettext_noop(
                        "a candidate may choose %(outcome)s, the outcome of the high-risk rule %(rule)s, "
                        "without its conditions"
                    ),
                    outcome=outcome,
                    rule=key,
                )
            )

    high_risk = [(r, risk) for r in rules if (risk := rule_high_risk(r, handoff)) is not None]
    covering = [r["key"] for r, _ in high_risk if r in deciding]
    for r, risk in high_risk:
        if r in deciding:
            continue
        mode = r.get("mode", "enforce")
        text = (
            gettext_noop("the high-risk rule %(rule)s (%(risk)s) is in %(mode)s mode: it does not decide")
            if mode != "enforce"
            else gettext_noop(
                "the high-risk rule %(rule)s (%(risk)s) is outside its effective dates: it does not decide"
            )
        )
        gaps.append(Reason(text, rule=r["key"], risk=risk, **({"mode": Reason(mode)} if mode != "enforce" else {})))
    if covering:
        fine.append(
            Reason(gettext_noop("high-risk branches are decided by hard rules: %(rules)s"), rules=_names(covering))
        )
    else:
        gaps.append(Reason(gettext_noop("no high-risk rule (compliance, risk or hand-off) enforces at this point")))

    kind = NAKED if naked else PARTIAL if gaps else CONTROLLED
    return Governance(kind=kind, reasons=tuple(naked + gaps + fine))


# --- static shadowing ---------------------------------------------------------------------------------

_STRONGER = {  # (op of the narrower condition, op of the wider one) -> how their bounds must compare
    (">", ">"): lambda a, b: a >= b,
    (">=", ">"): lambda a, b: a > b,
    (">", ">="): lambda a, b: a >= b,
    (">=", ">="): lambda a, b: a >= b,
    ("<", "<"): lambda a, b: a <= b,
    ("<=", "<"): lambda a, b: a < b,
    ("<", "<="): lambda a, b: a <= b,
    ("<=", "<="): lambda a, b: a <= b,
    ("==", ">"): lambda a, b: a > b,
    ("==", ">="): lambda a, b: a >= b,
    ("==", "<"): lambda a, b: a < b,
    ("==", "<="): lambda a, b: a <= b,
}


def _number(config: _Config, c: Mapping[str, Any]) -> float | None:
    if "threshold" in c:
        return config.threshold_value(c["threshold"])
    value = c.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _list_within(config: _Config, narrow_key: str, wide_key: str) -> bool:
    """Whether any input containing a term of ``narrow_key`` also contains a term of ``wide_key``."""
    if narrow_key == wide_key:
        return True
    narrow, wide = config.lists.get(narrow_key), config.lists.get(wide_key)
    if narrow is None or wide is None or not narrow.get("terms"):
        return False
    mode = narrow.get("match", "substring")
    if mode != wide.get("match", "substring") or mode == "regex":
        return False
    # Lists that read the input differently (one folds digits or reads pinyin, the other not) can hit apart.
    options = ("fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS)
    if any(bool(narrow.get(o)) != bool(wide.get(o)) for o in options):
        return False
    wide_terms = list(wide.get("terms", []))
    # A term inside a longer one is not implied where hits are judged by their edges (whole words, segmented
    # words) or read by sound: there only the same term is. Nor is a number inside a longer one where numeric
    # terms match whole numbers (fold_digits).
    if mode in ("word", "segmented") or narrow.get("match_pinyin"):
        return set(narrow["terms"]) <= set(wide_terms)
    whole = bool(narrow.get("fold_digits"))
    return all(any(w == term if whole and is_numeric(w) else w in term for w in wide_terms) for term in narrow["terms"])


def condition_implies(config: _Config, narrow: Mapping[str, Any], wide: Mapping[str, Any]) -> bool:
    """Whether ``wide`` holds whenever ``narrow`` does, as far as can be told without running them."""
    if dict(narrow) == dict(wide):
        return True
    if "input_contains" in narrow and "input_contains" in wide:
        # Unless phrases (and dropping negated hits) make a condition hold less often: a wide one with them may
        # fail where narrow holds.
        if wide.get("unless") or wide.get("unless_negated"):
            return False
        return _list_within(config, narrow["input_contains"], wide["input_contains"])
    if CONFIDENCE in narrow and CONFIDENCE in wide:
        a, b = config.threshold_value(narrow[CONFIDENCE]), config.threshold_value(wide[CONFIDENCE])
        return a is not None and b is not None and a <= b
    for kind in ("candidate_in", "session_state_in"):
        if kind in narrow and kind in wide:
            return set(narrow[kind]) <= set(wide[kind])
    if "candidate_not_in" in narrow and "candidate_not_in" in wide:
        return set(wide["candidate_not_in"]) <= set(narrow["candidate_not_in"])
    if "fact" in narrow and "fact" in wide and narrow["fact"] == wide["fact"]:
        compare = _STRONGER.get((narrow.get("op", ""), wide.get("op", "")))
        a, b = _number(config, narrow), _number(config, wide)
        return compare is not None and a is not None and b is not None and bool(compare(a, b))
    return False


def rule_implies(config: _Config, narrow: Mapping[str, Any], wide: Mapping[str, Any]) -> bool:
    """Whether rule ``wide`` holds whenever rule ``narrow`` does (conditions only; see the module docstring)."""
    wide_conditions = list(wide.get("conditions", []))
    narrow_conditions = list(narrow.get("conditions", []))
    if not wide_conditions:
        return True  # a rule without conditions is a catch-all
    if not narrow_conditions:
        return False  # a catch-all holds where a rule with conditions may not
    wide_any = wide.get("match", "all") == "any"
    if narrow.get("match", "all") == "all":
        held = [any(condition_implies(config, n, w) for n in narrow_conditions) for w in wide_conditions]
        return any(held) if wide_any else all(held)
    # narrow holds when any one of its conditions does: each of them alone must make wide hold
    for n in narrow_conditions:
        held = [condition_implies(config, n, w) for w in wide_conditions]
        if not (any(held) if wide_any else all(held)):
            return False
    return True


def _window_within(inner: Mapping[str, Any], outer: Mapping[str, Any]) -> bool:
    """Whether ``outer``'s effective dates cover all of ``inner``'s."""
    i_from, i_until = _when(inner.get("effective_from")), _when(inner.get("effective_until"))
    o_from, o_until = _when(outer.get("effective_from")), _when(outer.get("effective_until"))
    starts_ok = o_from is None or (i_from is not None and o_from <= i_from)
    ends_ok = o_until is None or (i_until is not None and i_until <= o_until)
    return starts_ok and ends_ok


def shadowed_rules(point: Mapping[str, Any], document: Mapping[str, Any]) -> list[Shadowed]:
    """The point's enforcing and shadow rules that an earlier enforcing rule always pre-empts."""
    config = _Config(document)
    rules = sorted(point.get("rules", []), key=lambda r: (r["priority"], r["key"]))
    found: list[Shadowed] = []
    for index, rule in enumerate(rules):
        if rule.get("mode", "enforce") == "off":
            continue
        for earlier in rules[:index]:
            if earlier.get("mode", "enforce") != "enforce" or not _window_within(rule, earlier):
                continue
            if rule_implies(config, rule, earlier):
                why = Reason(
                    gettext_noop(
                        "%(by)s (priority %(by_priority)s) holds whenever %(rule)s (priority %(priority)s) does"
                    ),
                    by=earlier["key"],
                    by_priority=earlier["priority"],
                    rule=rule["key"],
                    priority=rule["priority"],
                )
                found.append(Shadowed(key=rule["key"], by=earlier["key"], why=why))
                break
    return found

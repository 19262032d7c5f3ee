"""The decision log's "why" panel: what a logged decision was decided under, which rules matched and
why, and how its replays under its own and today's revision compare. The admin's log page
(``rules.decisions.admin``) and the rule simulator (``rules.governance.admin.simulator``) both show it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.engine import Decision
from rules.hooks import decision_shown
from rules.models import (
    ConfigRevision,
    DecisionPoint,
    DecisionRecord,
    RegressionCase,
    Rule,
    RuleCategory,
    RuledBy,
)

# Past these lengths a list shows the start, with the whole in a title (and on the record's page).
SESSION_CHARS = 24
AGENT_CHARS = 40
SESSION_SEARCH_HELP = _("Session id: the exact id, or the start of one followed by * (e.g. 7f3a*).")
RULED_BY_LABELS = dict(RuledBy.choices)
CATEGORY_LABELS = dict(RuleCategory.choices)


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _rule_urls(point: str, keys: list[str]) -> dict[str, str]:
    """Admin pages of the rules that still exist, by key."""
    if not keys:
        return {}
    rows = Rule.objects.filter(point__key=point, key__in=keys).values_list("key", "pk")
    return {key: reverse("admin:rules_rule_change", args=[pk]) for key, pk in rows}


def _revision_url(number: int) -> str | None:
    pk = ConfigRevision.objects.filter(number=number).values_list("pk", flat=True).first()
    return None if pk is None else reverse("admin:rules_configrevision_change", args=[pk])


def _point_outcomes(point: str, logged: str) -> list[str]:
    """The outcomes a pinned case may expect: the point's today, the logged one first."""
    outcomes = DecisionPoint.objects.filter(key=point).values_list("outcomes", flat=True).first() or []
    return [logged, *(o for o in outcomes if o != logged)]


def session_changelist_url(session_id: str) -> str:
    return reverse("admin:rules_decisionrecord_changelist") + "?" + urlencode({"q": session_id})


def masked_facts_rows(masked_facts: dict[str, Any] | None) -> list[tuple[str, str]]:
    """What was masked in the facts as (location, what): a fact path's value whole, or the kinds found."""
    masked_facts = masked_facts or {}
    whole = gettext("the whole value (a fact path of the point)")
    rows = [(location, whole) for location in masked_facts.get("paths", [])]
    rows += [(location, ", ".join(kinds)) for location, kinds in masked_facts.get("patterns", {}).items()]
    return sorted(rows)


def why_context(record: DecisionRecord, *, simulated: str = "") -> dict[str, Any]:
    """What the decision's detail page shows, as plain values (the template escapes all of it).

    ``simulated`` (a label such as "revision 3") is for the rule simulator's never-saved record: no
    replay, pin, anomalies or session, which only a logged decision has."""
    matched = sorted(record.matched_rules or [], key=lambda m: m.get("priority", 0))  # stable: keeps ties' order
    urls = _rule_urls(record.point, [m["key"] for m in matched])
    winner_key = record.rule_key if record.ruled_by == RuledBy.HARD_RULE else ""
    winner_marked = False
    rows = []
    for m in matched:
        winner = bool(winner_key) and not m.get("shadow") and m["key"] == winner_key and not winner_marked
        winner_marked = winner_marked or winner
        rows.append(
            {
                "key": m["key"],
                "priority": m.get("priority"),
                "category": CATEGORY_LABELS.get(m.get("category", ""), m.get("category", "")),
                "outcome": m.get("outcome", ""),
                "shadow": bool(m.get("shadow")),
                "winner": winner,
                "url": urls.get(m["key"]),
            }
        )
    tokens_total = None
    if record.tokens_prompt is not None or record.tokens_completion is not None:
        tokens_total = (record.tokens_prompt or 0) + (record.tokens_completion or 0)
    if simulated:
        return {
            "record": record,
            "simulated": simulated,
            "matched": rows,
            "winner_missing": bool(winner_key) and not winner_marked,
            "rule_url": urls.get(record.rule_key) if record.rule_key else None,
            "ruled_by_label": RULED_BY_LABELS.get(record.ruled_by, record.ruled_by),
            "rule_category_label": CATEGORY_LABELS.get(record.rule_category, record.rule_category),
            "has_candidate": bool(record.candidate_decision or record.candidate_raw or record.candidate_invalid),
            "keyword_hits": sorted((key, ", ".join(terms)) for key, terms in (record.keyword_hits or {}).items()),
            "masked": sorted((record.masked or {}).items()),
            "facts_json": _pretty_json(record.facts) if record.facts else "",
            "masked_facts": masked_facts_rows(record.masked_facts),
            "revision_url": _revision_url(record.revision),
        }
    context: dict[str, Any] = {
        "record": record,
        "matched": rows,
        "winner_missing": bool(winner_key) and not winner_marked,
        "rule_url": urls.get(record.rule_key) if record.rule_key else None,
        "ruled_by_label": RULED_BY_LABELS.get(record.ruled_by, record.ruled_by),
        "rule_category_label": CATEGORY_LABELS.get(record.rule_category, record.rule_category),
        "has_candidate": bool(record.candidate_decision or record.candidate_raw or record.candidate_invalid),
        "keyword_hits": sorted((key, ", ".join(terms)) for key, terms in (record.keyword_hits or {}).items()),
        "masked": sorted((record.masked or {}).items()),
        "facts_json": _pretty_json(record.facts) if record.facts else "",
        "masked_facts": masked_facts_rows(record.masked_facts),
        "revision_url": _revision_url(record.revision),
        "tokens_total": tokens_total,
        "anomalies": [],
        "replay_url": reverse("admin:rules_decisionrecord_replay", args=[record.pk]),
        "pin_url": reverse("admin:rules_decisionrecord_pin", args=[record.pk]),
        "outcomes": _point_outcomes(record.point, record.decision),
        "pinned": list(RegressionCase.objects.filter(decision_id=record.pk).order_by("pk")),
        "session_url": session_changelist_url(record.session_id) if record.session_id else None,
    }
    # What the apps built on the log know about the decision (the anomalies it raised, in agents).
    for extra in decision_shown.ask(record=record):
        context.update(extra or {})
    return context


# --- the replay view ------------------------------------------------------------------------------------


def why_side(decision: Decision | None, revision: int, label: str) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "label": label,
        "revision": revision,
        "decision": decision.decision,
        "ruled_by": RULED_BY_LABELS.get(decision.ruled_by or "", decision.ruled_by or ""),
        "rule": decision.rule.key if decision.rule else "",
        "matched": [{"key": m.key, "priority": m.priority, "shadow": m.shadow} for m in decision.matched_rules],
        "overridden": decision.overridden,
        "reason": decision.reason,
    }


def why_differs(side: dict[str, Any] | None, recorded: dict[str, Any]) -> list[str]:
    """The rows of ``side`` that do not agree with the recorded decision (the reason's wording aside)."""
    if side is None:
        return []

    def compared(s: dict[str, Any], name: str) -> Any:
        # As ``same_outcome`` compares them: matched rules by key and shadow mark (priorities may move).
        return [(m["key"], m["shadow"]) for m in s[name]] if name == "matched" else s[name]

    names = ("decision", "ruled_by", "rule", "matched", "overridden")
    return [name for name in names if compared(side, name) != compared(recorded, name)]

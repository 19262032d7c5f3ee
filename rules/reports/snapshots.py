"""What changed in the decision-point map between two reports, and a snapshot as plain text (the
e-mail to staff). ``map_changes`` and ``snapshot_text`` are pure functions of report data; the only
query is ``since_snapshot``'s read of the latest stored snapshot.

An override rate has "moved" when both reports know it (some decision had a candidate in both
windows) and it differs by at least ``OVERRIDE_RATE_MOVE`` — five percentage points — either way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.models import DecisionMapSnapshot

OVERRIDE_RATE_MOVE = 0.05


def _points(report: Mapping[str, Any], point: str = "") -> dict[str, Mapping[str, Any]]:
    return {p["key"]: p for p in report.get("points", []) if not point or p["key"] == point}


def map_changes(before: Mapping[str, Any], after: Mapping[str, Any], *, point: str = "") -> dict[str, Any]:
    """New and removed points, governance changes and override-rate moves from ``before`` to ``after``
    (both decision-map reports); ``point`` compares that point only."""
    old, new = _points(before, point), _points(after, point)
    moves = []
    for key in sorted(old.keys() & new.keys()):
        was, now = old[key].get("override_rate"), new[key].get("override_rate")
        if was is not None and now is not None and abs(now - was) >= OVERRIDE_RATE_MOVE - 1e-9:
            moves.append({"point": key, "from": was, "to": now, "change": round(now - was, 4)})
    return {
        "new_points": sorted(new.keys() - old.keys()),
        "removed_points": sorted(old.keys() - new.keys()),
        "governance_changes": [
            {"point": key, "from": old[key]["governance"], "to": new[key]["governance"]}
            for key in sorted(old.keys() & new.keys())
            if old[key]["governance"] != new[key]["governance"]
        ],
        "override_rate_moves": moves,
    }


def _snapshot_ref(snapshot: DecisionMapSnapshot) -> dict[str, Any]:
    return {
        "id": snapshot.pk,
        "taken_at": snapshot.taken_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
        "days": snapshot.days,
    }


def since_snapshot(report: Mapping[str, Any], *, before: dt.datetime, point: str = "") -> dict[str, Any] | None:
    """What changed between the latest snapshot taken at or before ``before`` and ``report``; ``None``
    when there is no snapshot yet."""
    snapshot = DecisionMapSnapshot.objects.filter(taken_at__lte=before).order_by("-taken_at", "-pk").first()
    if snapshot is None:
        return None
    return {"snapshot": _snapshot_ref(snapshot), **map_changes(snapshot.report, report, point=point)}


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}%"


# The map's page shows the changes in the operator's language; the e-mail (Celery beat or manage.py) in English.
GOVERNANCE_LABELS = {"controlled": _("controlled"), "partial": _("partial"), "naked": _("naked")}


def _governance(value: str) -> str:
    return str(GOVERNANCE_LABELS.get(value, value))


def changes_lines(changes: Mapping[str, Any]) -> list[str]:
    """The changes as sentences, one per line; empty when nothing changed."""
    lines = []
    if changes["new_points"]:
        lines.append(gettext("New points: %(points)s") % {"points": ", ".join(changes["new_points"])})
    if changes["removed_points"]:
        lines.append(gettext("Removed points: %(points)s") % {"points": ", ".join(changes["removed_points"])})
    for c in changes["governance_changes"]:
        lines.append(
            gettext("Governance of %(point)s: %(was)s → %(now)s")
            % {"point": c["point"], "was": _governance(c["from"]), "now": _governance(c["to"])}
        )
    for m in changes["override_rate_moves"]:
        lines.append(
            gettext("Override rate of %(point)s: %(was)s → %(now)s (%(change)s points)")
            % {"point": m["point"], "was": _pct(m["from"]), "now": _pct(m["to"]), "change": f"{100 * m['change']:+.1f}"}
        )
    return lines


def snapshot_text(
    report: Mapping[str, Any], *, previous: Mapping[str, Any] | None, previous_taken_at: str = "", link: str = ""
) -> str:
    """The snapshot e-mail's body: the summary, what changed since ``previous`` (a report, or ``None``
    for the first snapshot), and one paragraph per point."""
    window = report["window"]
    summary = report["governance"]
    out = [
        f"The decision-point map of {report['generated_at']}: the last {window['days']} days "
        f"({window['start']} to {window['end']}), configuration revision {report['revision']}.",
        f"{summary['controlled']} controlled, {summary['partial']} partial, {summary['naked']} naked.",
        "",
    ]
    if previous is None:
        out.append("This is the first snapshot: there is nothing to compare it with.")
    else:
        lines = changes_lines(map_changes(previous, report))
        out.append(f"Since the previous snapshot ({previous_taken_at}):")
        out.extend(
            f"- {line}" for line in lines or ["no new or removed points, governance changes or moved override rates"]
        )
        out.append(f"(An override rate has moved when it changed by at least {100 * OVERRIDE_RATE_MOVE:.0f} points.)")
    out.append("")
    for p in report["points"]:
        by = p["by_ruled_by"]
        out.append(f"{p['key']}: {p['governance']}")
        out.append(
            f"  {p['decisions']} decisions (hard rule {by.get('hard_rule', 0)}, LLM candidate "
            f"{by.get('llm_candidate', 0)}, default {by.get('default', 0)}); override rate {_pct(p['override_rate'])}; "
            f"{p['llm_calls_avoided']} LLM calls avoided; {p['anomalies']} anomalies"
        )
        if len(p.get("by_model", [])) > 1:  # one row says nothing the line above does not
            for m in p["by_model"]:
                out.append(
                    f"  model {m['model'] or 'unknown'}, prompt {m['prompt_version'] or 'unknown'}: "
                    f"{m['decisions']} decisions; override rate {_pct(m['override_rate'])}; "
                    f"anomaly rate {_pct(m['anomaly_rate'])}"
                )
        for reason in p["reasons"]:
            out.append(f"  - {reason}")
        if p["dead_rules"]:
            out.append("  Dead rules: " + ", ".join(p["dead_rules"]))
        if p["shadowed_rules"]:
            out.append("  Shadowed rules: " + ", ".join(f"{s['key']} (by {s['by']})" for s in p["shadowed_rules"]))
        if p["pending_changes"]:
            out.append("  Pending change requests: " + ", ".join(f"#{c['id']}" for c in p["pending_changes"]))
    if link:
        out.extend(["", f"The report: {link}"])
    return "\n".join(out) + "\n"

"""The decision-point map as CSV: one row per point, for spreadsheets.

Cells that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return) are written with a leading apostrophe: reasons and change-request texts are typed by
people, and a CSV opened in a spreadsheet must not run them (OWASP "CSV injection").
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

COLUMNS = (
    "point",
    "name",
    "governance",
    "reasons",
    "window_start",
    "window_end",
    "days",
    "decisions",
    "hard_rule",
    "llm_candidate",
    "default",
    "with_candidate",
    "overridden",
    "override_rate",
    "llm_calls_avoided",
    "needs_candidate",
    "anomalies",
    "by_model",
    "ghost_failures",
    "tokens_prompt",
    "tokens_completion",
    "tokens_total",
    "rules_enforce",
    "rules_shadow",
    "rules_off",
    "keyword_lists",
    "thresholds",
    "top_rules",
    "dead_rules",
    "shadowed_rules",
    "pending_changes",
    "last_change_who",
    "last_change_when",
    "last_change_reason",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _modes(point: Mapping[str, Any], mode: str) -> int:
    return sum(modes.get(mode, 0) for modes in point["rules_by_category"].values())


def _model_cell(m: Mapping[str, Any]) -> str:
    """One row of the breakdown by model: ``model@prompt_version:decisions:override_rate:anomaly_rate``
    (``unknown`` for a name the agent did not send; an empty rate when there is nothing to divide by)."""
    rates = ("" if r is None else str(r) for r in (m["override_rate"], m["anomaly_rate"]))
    return ":".join([f"{m['model'] or 'unknown'}@{m['prompt_version'] or 'unknown'}", str(m["decisions"]), *rates])


def decision_map_csv(report: Mapping[str, Any]) -> str:
    """The report (``rules.reports.decision_map.decision_map``) as CSV text with a header row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    window = report["window"]
    for p in report["points"]:
        last = p["last_change"] or {}
        row = {
            "point": p["key"],
            "name": p["name"],
            "governance": p["governance"],
            "reasons": "; ".join(p["reasons"]),
            "window_start": window["start"],
            "window_end": window["end"],
            "days": window["days"],
            "decisions": p["decisions"],
            **{k: p["by_ruled_by"].get(k, 0) for k in ("hard_rule", "llm_candidate", "default")},
            "with_candidate": p["with_candidate"],
            "overridden": p["overridden"],
            "override_rate": p["override_rate"],
            "llm_calls_avoided": p["llm_calls_avoided"],
            "needs_candidate": p["needs_candidate"],
            "anomalies": p["anomalies"],
            "by_model": " ".join(_model_cell(m) for m in p.get("by_model", [])),
            "ghost_failures": p["ghost_failures"],
            "tokens_prompt": p["tokens"]["prompt"],
            "tokens_completion": p["tokens"]["completion"],
            "tokens_total": p["tokens"]["total"],
            "rules_enforce": _modes(p, "enforce"),
            "rules_shadow": _modes(p, "shadow"),
            "rules_off": _modes(p, "off"),
            "keyword_lists": " ".join(kl["key"] for kl in p["keyword_lists"]),
            "thresholds": " ".join(f"{t['key']}={t['value']}" for t in p["thresholds"]),
            "top_rules": " ".join(f"{r['key']}:{r['hits']}" for r in p["top_rules"]),
            "dead_rules": " ".join(p["dead_rules"]),
            "shadowed_rules": " ".join(f"{s['key']}<{s['by']}" for s in p["shadowed_rules"]),
            "pending_changes": " ".join(str(c["id"]) for c in p["pending_changes"]),
            "last_change_who": last.get("who"),
            "last_change_when": last.get("when"),
            "last_change_reason": last.get("reason"),
        }
        writer.writerow([_cell(row[c]) for c in COLUMNS])
    return out.getvalue()

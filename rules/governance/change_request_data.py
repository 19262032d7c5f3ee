"""A change request's proposal as data: how its record changes are stored, shown, digested, checked
against the live configuration and applied to a configuration document. Pure functions of the stored
``changes``; nothing here writes.

The digest names exactly what a reviewer saw: the sha256 of the canonical JSON of ``changes``. It
changes whenever the request is edited, and an approval must name the digest it was given for
(``change_request_approve``), so that nobody approves one change and applies another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

from decision_service.digests import canonical_digest
from rules.config.document.diff import KIND_LABELS, RECORD_KEY, RecordChange, config_diff, same
from rules.governance.risk import RiskReason, change_risks
from rules.models import OPEN_STATES, ChangeRequest

# The document section each kind of record (but rules, which live in their point) is in.
SECTION_OF = {
    "threshold": "thresholds",
    "keyword_list": "keyword_lists",
    "point": "points",
    "machine": "machines",
    "tool": "tools",
    "mcp_server": "mcp_servers",
}


def change_request_digest(changes: Iterable[Mapping[str, Any]]) -> str:
    """The digest of a request's proposed change (its ``changes``), the same wherever it is computed:
    keys sorted, no whitespace, text as UTF-8."""
    return canonical_digest(list(changes), text="utf-8")


def change_request_diff_rows(request: ChangeRequest) -> list[dict[str, Any]]:
    """The diff as the staff API and the ``change_request_changed`` refusal show it."""
    return [
        {"record": row.record, "field": row.field, "before": row.before, "after": row.after}
        for row in change_request_diff(request)
    ]


def change_document(change: RecordChange) -> dict[str, Any]:
    """How one record change is stored on a request: enough to apply it and to check it is still current."""
    return {
        "action": change.action,
        "kind": change.kind,
        "key": change.key,
        "point": change.point,
        "before": _without_rules(change.kind, change.old),
        "after": _without_rules(change.kind, change.new),
    }


def _without_rules(kind: str, record: dict[str, Any] | None) -> dict[str, Any] | None:
    # A point's rules are records of their own, diffed and applied one by one.
    if record is None or kind != "point":
        return record
    return {k: v for k, v in record.items() if k != "rules"}


def change_record_label(change: Mapping[str, Any]) -> str:
    point = change.get("point") or ""
    return f"{KIND_LABELS[change['kind']]} {point + '.' if point else ''}{change['key']}"


@dataclass(frozen=True)
class DiffRow:
    record: str
    field: str
    before: Any
    after: Any


def change_request_diff(request: ChangeRequest) -> list[DiffRow]:
    """The request's change as rows of (record, field, before, after), for people and the API."""
    rows: list[DiffRow] = []
    for change in request.changes:
        label = change_record_label(change)
        before, after = change["before"] or {}, change["after"] or {}
        names = [*before, *(k for k in after if k not in before)]
        for name in names:
            if name == RECORD_KEY[change["kind"]]:
                continue
            old, new = before.get(name), after.get(name)
            if change["action"] == "change" and same(old, new):
                continue
            rows.append(DiffRow(label, name, old, new))
    return rows


def _find(document: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record a change is about, as ``document`` has it (a point without its rules)."""
    kind, key = change["kind"], change["key"]
    if kind == "rule":
        point = next((p for p in document.get("points", []) if p["key"] == change["point"]), None)
        return next((r for r in point.get("rules", []) if r["key"] == key), None) if point else None
    found = next((r for r in document.get(SECTION_OF[kind], []) if r[RECORD_KEY[kind]] == key), None)
    return _without_rules(kind, found)


def change_request_stale_record(request: ChangeRequest, document: Mapping[str, Any]) -> str | None:
    """The first record the request touches that ``document`` no longer has as it was, if any."""
    for change in request.changes:
        if not same(_find(document, change), change["before"]):
            return change_record_label(change)
    return None


def config_document_apply(live: Mapping[str, Any], changes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``live`` with the request's record changes made, in the canonical order."""
    sections = {
        section: {r[RECORD_KEY[kind]]: dict(r) for r in live.get(section, [])} for kind, section in SECTION_OF.items()
    }
    rules = {p["key"]: {r["key"]: r for r in p.get("rules", [])} for p in live.get("points", [])}
    for change in changes:
        kind, key, after = change["kind"], change["key"], change["after"]
        if kind == "rule":
            point_rules = rules.setdefault(change["point"], {})
            if after is None:
                point_rules.pop(key, None)
            else:
                point_rules[key] = after
            continue
        records = sections[SECTION_OF[kind]]
        if after is None:
            records.pop(key, None)
            if kind == "point":
                rules.pop(key, None)
        else:
            records[key] = dict(after)
    points = []
    for key in sorted(sections["points"]):
        point = dict(sections["points"][key])
        point["rules"] = sorted(rules.get(key, {}).values(), key=lambda r: (r["priority"], r["key"]))
        points.append(point)
    return {
        "version": live.get("version", 1),
        "thresholds": [sections["thresholds"][k] for k in sorted(sections["thresholds"])],
        "keyword_lists": [sections["keyword_lists"][k] for k in sorted(sections["keyword_lists"])],
        "points": points,
        "machines": [sections["machines"][k] for k in sorted(sections["machines"])],
        # As config_document: tools only when there are any.
        **({"tools": [sections["tools"][k] for k in sorted(sections["tools"])]} if sections["tools"] else {}),
        **(
            {"mcp_servers": [sections["mcp_servers"][k] for k in sorted(sections["mcp_servers"])]}
            if sections["mcp_servers"]
            else {}
        ),
    }


def change_risks_under_open_requests(*, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[RiskReason]:
    """Why the change from ``before`` to ``after`` (the live configuration and the one proposed) needs
    approval in a configuration where an open request has applied: the change is replayed on top of each
    open request's proposal and judged there. Empty when it is low-risk under every one of them."""
    reasons: list[RiskReason] = []
    for request in ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk"):
        then_before = config_document_apply(before, request.changes)
        then_after = config_document_apply(after, request.changes)
        for reason in change_risks(then_before, then_after, config_diff(then_before, then_after)):
            reasons.append(
                RiskReason.of(
                    reason.record,
                    gettext_noop("%(why)s, once change request %(number)s is applied"),
                    why={"message": reason.message, "params": dict(reason.params)},
                    number=request.pk,
                )
            )
    return reasons

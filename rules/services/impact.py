"""The impact preview of a change request: its proposal replayed against real past traffic.

The most recent logged decisions of every point the proposal affects (``ARBITER_IMPACT_DECISIONS``
per point, within ``ARBITER_IMPACT_DAYS``) are decided again under the proposed configuration and
compared with what was decided then. Pinned regression cases of those points are checked too. The
result — how many were evaluated and changed, how many of those read a fact that was masked in the log
(their replay left it out, so their new outcome is an estimate), a from → to matrix of outcomes, up to
20 masked examples, the regression cases it would break — is stored on the request for its page and the API.
Runs in a Celery task (``rules.tasks.change_request_impact``); progress is saved as it goes.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from rules.engine import compile_config
from rules.models import ChangeRequest, DecisionRecord, ImpactStatus, RegressionCase
from rules.selectors import config_document
from rules.services.change_requests import config_document_apply
from rules.services.regressions import case_evaluate
from rules.services.replay import masked_facts_read, reevaluate

logger = logging.getLogger(__name__)

MAX_EXAMPLES = 20
PROGRESS_EVERY = 2000
_FIELDS = (
    "id",
    "created_at",
    "decision",
    "input",
    "masked",
    "masked_facts",
    "keyword_hits",
    "facts",
    "session_state",
    "candidate_decision",
    "candidate_confidence",
    "candidate_reason",
    "candidate_invalid",
)


@dataclass(slots=True)
class _Row:
    """A logged decision as the replay reads it, without building a model instance per row."""

    id: Any
    created_at: dt.datetime
    decision: str
    input: str
    masked: dict[str, Any]
    masked_facts: dict[str, Any]
    keyword_hits: dict[str, Any]
    facts: dict[str, Any]
    session_state: str
    candidate_decision: str
    candidate_confidence: float | None
    candidate_reason: str
    candidate_invalid: bool


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _deciding_view(document: Mapping[str, Any], key: str) -> Any:
    """What decides at a point: the point without its prose, and the values of the thresholds and the
    terms of the keyword lists its rules refer to (a changed threshold changes every point using it)."""
    point = next((p for p in document.get("points", []) if p["key"] == key), None)
    if point is None:
        return None
    prose = {"name", "description"}
    rules = [{k: v for k, v in r.items() if k != "description"} for r in point.get("rules", [])]
    referenced = set(_strings([r.get("conditions", []) for r in rules]))
    thresholds = {t["key"]: t["value"] for t in document.get("thresholds", []) if t["key"] in referenced}
    lists = {
        kl["key"]: (kl.get("match"), kl.get("fold_traditional"), kl.get("ignore_cjk_gaps"), sorted(kl["terms"]))
        for kl in document.get("keyword_lists", [])
        if kl["key"] in referenced
    }
    head = {k: v for k, v in point.items() if k not in prose and k != "rules"}
    return head, rules, thresholds, lists


def affected_points(live: Mapping[str, Any], proposed: Mapping[str, Any]) -> list[str]:
    """Live points that would decide differently for some request: they, their rules, or the thresholds
    and keyword lists they use change (or they are removed). New points have no traffic to replay."""
    keys = sorted(p["key"] for p in live.get("points", []))
    return [k for k in keys if _deciding_view(live, k) != _deciding_view(proposed, k)]


def recent_decisions(point: str, *, limit: int, since: dt.datetime) -> Iterator[_Row]:
    rows = (
        DecisionRecord.objects.filter(point=point, created_at__gte=since)
        .order_by("-created_at")
        .values_list(*_FIELDS)[:limit]
    )
    for row in rows.iterator(chunk_size=2000):
        yield _Row(*row)


def impact_compute(
    *,
    live_document: Mapping[str, Any],
    proposed_document: Mapping[str, Any],
    now: dt.datetime | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Replay recent traffic under ``proposed_document``; see the module docstring for what is counted."""
    now = now or timezone.now()
    backend = settings.ARBITER_ENGINE
    proposed = compile_config(proposed_document, revision=0, backend=backend)
    points = affected_points(live_document, proposed_document)
    since = now - dt.timedelta(days=settings.ARBITER_IMPACT_DAYS)
    evaluated = changed = approximate = 0
    matrix: dict[str, dict[str, int]] = {}
    examples: list[dict[str, Any]] = []
    for key in points:
        point = proposed.point(key)
        for row in recent_decisions(key, limit=settings.ARBITER_IMPACT_DECISIONS, since=since):
            evaluated += 1
            if point is None:
                new_decision, new_rule, new_by = "(point removed)", None, None
            else:
                decision = reevaluate(point, row, exact=False)
                if masked_facts_read(point, row):
                    approximate += 1
                new_decision = decision.decision or "(asks the LLM)"
                new_rule, new_by = (decision.rule.key if decision.rule else None), decision.ruled_by
            if new_decision != row.decision:
                changed += 1
                cell = matrix.setdefault(row.decision, {})
                cell[new_decision] = cell.get(new_decision, 0) + 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(
                        {
                            "decision_id": str(row.id),
                            "point": key,
                            "input": row.input,
                            "created_at": row.created_at.isoformat().replace("+00:00", "Z"),
                            "old": row.decision,
                            "new": new_decision,
                            "rule": new_rule,
                            "ruled_by": new_by,
                        }
                    )
            if progress is not None and evaluated % PROGRESS_EVERY == 0:
                progress(evaluated)
    broken = []
    for case in RegressionCase.objects.filter(point__in=points).order_by("pk"):
        point = proposed.point(case.point)
        got = case_evaluate(case, point, now=now) if point is not None else "(point removed)"
        if got != case.expected:
            broken.append({"id": case.pk, "point": case.point, "expected": case.expected, "got": got})
    return {
        "status": ImpactStatus.DONE.value,
        "points": points,
        "evaluated": evaluated,
        "changed": changed,
        "masked_facts": approximate,
        "matrix": matrix,
        "examples": examples,
        "broken_cases": broken,
        "days": settings.ARBITER_IMPACT_DAYS,
        "per_point": settings.ARBITER_IMPACT_DECISIONS,
        "computed_at": now.isoformat().replace("+00:00", "Z"),
    }


def change_request_impact_run(*, request_id: int) -> dict[str, Any]:
    """Compute and store a request's impact preview (the Celery task's body; safe to run again)."""
    request = ChangeRequest.objects.get(pk=request_id)
    ChangeRequest.objects.filter(pk=request_id).update(
        impact_status=ImpactStatus.RUNNING, impact={"status": ImpactStatus.RUNNING.value, "evaluated": 0}
    )

    def progress(evaluated: int) -> None:
        ChangeRequest.objects.filter(pk=request_id).update(
            impact={"status": ImpactStatus.RUNNING.value, "evaluated": evaluated}
        )

    try:
        live = config_document()
        impact = impact_compute(
            live_document=live, proposed_document=config_document_apply(live, request.changes), progress=progress
        )
    except Exception as exc:
        logger.exception("impact preview of change request %s failed", request_id)
        impact = {"status": ImpactStatus.FAILED.value, "error": str(exc)[:2000]}
    ChangeRequest.objects.filter(pk=request_id).update(impact_status=impact["status"], impact=impact)
    return impact

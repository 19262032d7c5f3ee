"""The impact preview of a change request: its proposal replayed against real past traffic.

The most recent logged decisions of every point the proposal affects (``ARBITER_IMPACT_DECISIONS``
per point, within ``ARBITER_IMPACT_DAYS``) are decided again under the proposed configuration and
compared with what was decided then. Pinned regression cases of those points are checked too. The
result — how many were evaluated and changed; how many of the changed ones a high-risk rule had decided
(``high_risk_flipped``: the logged deciding rule is high-risk by ``rules.governance.risk``, the decisions four-eyes
is there to protect); how many read a fact (or a session field) that was masked in the log (their replay
left it out, so their new outcome is an estimate); a from → to matrix of outcomes, up to 20 masked
examples, the regression cases it would break — is stored on the request for its page and the API.
Runs in a Celery task (``rules.tasks.change_request_impact``); progress is saved as it goes.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rules.config.selectors import config_document
from rules.decisions.decide import logged_candidate
from rules.decisions.replay import Prepass, facts_unmasked, replay_decision
from rules.decisions.selectors import decision_log_row_ids, decision_log_rows
from rules.decisions.session_data import session_view_logged
from rules.engine import CompiledPoint, compile_config
from rules.engine.evasion import EVASION_OPTIONS
from rules.governance.change_requests import change_request_digest, config_document_apply
from rules.governance.regressions import case_evaluate
from rules.governance.risk import HIGH_RISK_CATEGORIES, document_strings, handoff_outcomes, rule_high_risk
from rules.models import ChangeRequest, ImpactStatus, RegressionCase

logger = logging.getLogger(__name__)

MAX_EXAMPLES = 20
PROGRESS_EVERY = 2000
# What the replay reads of a logged decision, in this order (``_replay_point`` unpacks it). Not the
# candidate's reason: the engine never decides by it, and it can be long. The timestamp is read only for
# points that can decide by the clock (``PointSpec.reads_clock``); the others are decided at the preview's
# ``now``, which they do not read, and the few examples get their timestamps afterwards.
_COLUMNS = (
    "id",
    "decision",
    "input",
    "masked",
    "masked_facts",
    "keyword_hits",
    "facts",
    "session_state",
    "candidate_decision",
    "candidate_confidence",
    "candidate_invalid",
    "rule_key",
    "rule_category",
)


def _deciding_view(document: Mapping[str, Any], key: str) -> Any:
    """What decides at a point: the point without its prose, and the values of the thresholds and the
    terms of the keyword lists its rules refer to (a changed threshold changes every point using it)."""
    point = next((p for p in document.get("points", []) if p["key"] == key), None)
    if point is None:
        return None
    prose = {"name", "description"}
    rules = [{k: v for k, v in r.items() if k != "description"} for r in point.get("rules", [])]
    referenced = set(document_strings([r.get("conditions", []) for r in rules]))
    thresholds = {t["key"]: t["value"] for t in document.get("thresholds", []) if t["key"] in referenced}
    lists = {
        kl["key"]: (
            kl.get("match"),
            kl.get("fold_traditional"),
            kl.get("ignore_cjk_gaps"),
            *(kl.get(option) for option in EVASION_OPTIONS),
            sorted(kl["terms"]),
        )
        for kl in document.get("keyword_lists", [])
        if kl["key"] in referenced
    }
    head = {k: v for k, v in point.items() if k not in prose and k != "rules"}
    return head, rules, thresholds, lists


def impact_points_affected(live: Mapping[str, Any], proposed: Mapping[str, Any]) -> list[str]:
    """Live points that would decide differently for some request: they, their rules, or the thresholds
    and keyword lists they use change (or they are removed). New points have no traffic to replay."""
    keys = sorted(p["key"] for p in live.get("points", []))
    return [k for k in keys if _deciding_view(live, k) != _deciding_view(proposed, k)]


def live_high_risk_rules(document: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Point key → the keys of its high-risk rules (``rules.governance.risk``) in ``document``."""
    machines = {m["key"]: m for m in document.get("machines", [])}
    found: dict[str, frozenset[str]] = {}
    for point in document.get("points", []):
        handoff = handoff_outcomes(point, machines)
        found[point["key"]] = frozenset(r["key"] for r in point.get("rules", []) if rule_high_risk(r, handoff))
    return found


_decode = msgspec.json.Decoder().decode


def row_json(text: str | None) -> Any:
    """A JSON column of a row read by ``decision_log_rows``, as the ORM would have decoded it (``json.loads``),
    several times faster. msgspec refuses what the standard library reads beyond JSON (NaN, infinities, lone
    surrogates — the log's SQLite text may hold them); those few go to ``json.loads``."""
    if text is None:
        return None
    try:
        return _decode(text)
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # as the ORM's JSONField does


def _replay_point(
    key: str,
    point: CompiledPoint | None,
    *,
    since: dt.datetime,
    now: dt.datetime,
    tally: _Tally,
    high_risk: frozenset[str] = frozenset(),
) -> None:
    """Replay one point's recent traffic under its proposed compiled form ``point`` into ``tally``;
    ``high_risk`` are the live point's high-risk rules (a decision one of them made is counted apart)."""
    clock = point is not None and point.spec.reads_clock()
    columns = (*_COLUMNS, "created_at") if clock else _COLUMNS
    # What the rules read of the session, as the row recorded it: only for a point whose rules read it.
    reads_session = point is not None and point.reads_session()
    if reads_session:
        columns = (*columns, "session_read")
    rows = decision_log_rows(
        point=key,
        since=since,
        limit=settings.ARBITER_IMPACT_DECISIONS,
        columns=columns,
        converted=("created_at",) if clock else (),
    )
    prepasses: dict[str, Prepass] = {}
    pending: list[dict[str, Any]] = []  # this point's examples, waiting for their ids and timestamps
    at = now
    for row in rows:
        raw_id, old, text, masked_json, masked_facts_json, hits_json, facts_json, state, cand, conf, invalid = row[:11]
        # Made by a high-risk rule: one the live configuration holds high-risk, or logged in a high-risk
        # category (a rule since renamed or recategorised still counts as what it was).
        by_high_risk = bool(row[11]) and (row[11] in high_risk or row[12] in HIGH_RISK_CATEGORIES)
        if point is None:
            new_decision, new_rule, new_by = "(point removed)", None, None
        else:
            masked = bool(row_json(masked_json))
            if clock:
                at = row[13]
            # Masked facts are left out of the replay; a row whose rules read one is counted as an estimate.
            facts, hidden = facts_unmasked(row_json(facts_json) or {}, row_json(masked_facts_json))
            session = None
            if reads_session:
                session, hidden_fields = session_view_logged(row_json(row[-1]))
                hidden_fields &= point.session_fields_read
            if hidden & point.facts_read or (reads_session and hidden_fields):
                tally.approximate += 1
            decision = replay_decision(
                point,
                text=text,
                masked=masked,
                keyword_hits=row_json(hits_json) if masked else None,
                facts=facts,
                session_state=state,
                candidate=logged_candidate(cand, conf, ""),
                candidate_invalid=bool(invalid),
                now=at,
                exact=False,
                prepasses=prepasses,
                session=session,
            )
            new_decision = decision.decision or "(asks the LLM)"
            new_rule, new_by = (decision.rule.key if decision.rule else None), decision.ruled_by
        example = tally.count(old, new_decision, high_risk=by_high_risk)
        if example:
            pending.append(
                {
                    "decision_id": raw_id,
                    "point": key,
                    "input": text,
                    "created_at": None,
                    "old": old,
                    "new": new_decision,
                    "rule": new_rule,
                    "ruled_by": new_by,
                }
            )
    if pending:
        logged = decision_log_row_ids(e["decision_id"] for e in pending)
        for e in pending:
            # A row gone since it was read (the retention job) keeps its example without a timestamp.
            e["decision_id"], created_at = logged[e["decision_id"]]
            e["created_at"] = created_at.isoformat().replace("+00:00", "Z") if created_at else None
        tally.examples.extend(pending)
    tally.waiting = 0


@dataclass(slots=True)
class _Tally:
    """What a replay counts; ``count`` says whether a changed decision is to become an example."""

    progress: Any = None
    evaluated: int = 0
    changed: int = 0
    approximate: int = 0  # replayed without a masked fact one of the point's rules reads
    high_risk_flipped: int = 0  # changed decisions that a high-risk rule had made
    matrix: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0  # examples chosen but not yet in ``examples``

    def count(self, old: str, new: str, *, high_risk: bool = False) -> bool:
        self.evaluated += 1
        example = False
        if new != old:
            self.changed += 1
            self.high_risk_flipped += high_risk
            cell = self.matrix.setdefault(old, {})
            cell[new] = cell.get(new, 0) + 1
            if len(self.examples) + self.waiting < MAX_EXAMPLES:
                self.waiting += 1
                example = True
        if self.progress is not None and self.evaluated % PROGRESS_EVERY == 0:
            self.progress(self.evaluated)
        return example


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
    points = impact_points_affected(live_document, proposed_document)
    since = now - dt.timedelta(days=settings.ARBITER_IMPACT_DAYS)
    tally = _Tally(progress=progress)
    high_risk = live_high_risk_rules(live_document)
    for key in points:
        _replay_point(
            key, proposed.point(key), since=since, now=now, tally=tally, high_risk=high_risk.get(key, frozenset())
        )
    broken = []
    for case in RegressionCase.objects.filter(point__in=points).order_by("pk"):
        point = proposed.point(case.point)
        got = case_evaluate(case, point, now=now) if point is not None else "(point removed)"
        if got != case.expected:
            broken.append({"id": case.pk, "point": case.point, "expected": case.expected, "got": got})
    return {
        "status": ImpactStatus.DONE.value,
        "points": points,
        "evaluated": tally.evaluated,
        "changed": tally.changed,
        "masked_facts": tally.approximate,
        "high_risk_flipped": tally.high_risk_flipped,
        "matrix": tally.matrix,
        "examples": tally.examples,
        "broken_cases": broken,
        "days": settings.ARBITER_IMPACT_DAYS,
        "per_point": settings.ARBITER_IMPACT_DECISIONS,
        "computed_at": now.isoformat().replace("+00:00", "Z"),
    }


def change_request_impact_run(*, request_id: int) -> dict[str, Any]:
    """Compute and store a request's impact preview (the Celery task's body; safe to run again).

    What it stores is about the change it read: if the author edits the request meanwhile (its edit
    queues a fresh preview), this run's results are dropped, so a preview of the old change — with its
    broken regression cases, or without them — never stands for the new one."""
    request = ChangeRequest.objects.get(pk=request_id)
    previewed = change_request_digest(request.changes)

    def store(**fields: Any) -> None:
        with transaction.atomic():  # the row lock alone, briefly: nothing else is locked meanwhile
            current = ChangeRequest.objects.select_for_update().filter(pk=request_id).first()
            if current is not None and change_request_digest(current.changes) == previewed:
                ChangeRequest.objects.filter(pk=request_id).update(**fields)

    store(impact_status=ImpactStatus.RUNNING, impact={"status": ImpactStatus.RUNNING.value, "evaluated": 0})

    def progress(evaluated: int) -> None:
        store(impact={"status": ImpactStatus.RUNNING.value, "evaluated": evaluated})

    try:
        live = config_document()
        impact = impact_compute(
            live_document=live, proposed_document=config_document_apply(live, request.changes), progress=progress
        )
    except Exception as exc:
        logger.exception("impact preview of change request %s failed", request_id)
        impact = {"status": ImpactStatus.FAILED.value, "error": str(exc)[:2000]}
    store(impact_status=impact["status"], impact=impact)
    return impact

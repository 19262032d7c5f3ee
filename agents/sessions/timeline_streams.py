"""The sessions room's own timeline streams (``agents.sessions.timeline``): moves, decisions, anomalies.

Text is shown as the decision log keeps it: a decision's input, reasons and raw output are masked in the
log already; a move's reason and an anomaly's detail and raw output, kept as sent, are masked here with
the point's masker (the built-in patterns where the event names none). A move's fields were masked when
written (``agents.sessions.fields``).

Types, as seed 000 names a run's events: a move is a ``state_transition``, a move that only set fields
(``PATCH …/fields``, kind ``fields``) a ``field_change``; a decision is a ``decision``, an anomaly an
``anomaly``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.sessions.models import Anomaly, Session, Transition, TransitionKind
from agents.sessions.timeline import TimelineEvent, TimelineMasking
from rules.models import DecisionRecord

STATE_TRANSITION, FIELD_CHANGE, DECISION, ANOMALY = "state_transition", "field_change", "decision", "anomaly"


def transition_event_type(move: Transition) -> str:
    return FIELD_CHANGE if move.kind == TransitionKind.FIELDS else STATE_TRANSITION


def _moves(session: Session, after: int) -> QuerySet[Transition]:
    return Transition.objects.filter(session=session, sequence_id__gt=after)


def moves_newer(session: Session, after: int) -> QuerySet[Any]:
    return _moves(session, after).values("pk")


def moves_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = list(_moves(session, after).select_related("decision").order_by("sequence_id")[:limit])
    if not rows:
        return []
    masked = TimelineMasking()
    events = []
    for t in rows:
        point = t.decision.point if t.decision is not None else ""
        data = {
            "seq": t.seq,
            "kind": t.kind,
            "actor": t.actor,
            "reason": masked(t.reason, point),
            "decision_id": str(t.decision_id) if t.decision_id else None,
            "fields": t.fields_changed,
            "from": t.from_state,
            "to": t.to_state,
        }
        events.append(TimelineEvent(t.sequence_id, t.created_at, transition_event_type(t), data))
    return events


def _decisions(session: Session, after: int) -> QuerySet[DecisionRecord]:
    return DecisionRecord.objects.filter(session_id=session.key, agent_id=session.agent_id, sequence_id__gt=after)


def decisions_newer(session: Session, after: int) -> QuerySet[Any]:
    return _decisions(session, after).values("pk")


def decision_event_data(d: DecisionRecord) -> dict[str, Any]:
    return {
        "id": str(d.pk),
        "point": d.point,
        "input": d.input,
        "session_state": d.session_state or None,
        "candidate": None
        if not d.candidate_decision
        else {"decision": d.candidate_decision, "confidence": d.candidate_confidence, "reason": d.candidate_reason},
        "candidate_invalid": d.candidate_invalid,
        "decision": d.decision,
        "ruled_by": d.ruled_by,
        "rule": d.rule_key or None,
        "overridden": d.overridden,
        "reason": d.reason,
        "revision": d.revision,
    }


def decisions_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = _decisions(session, after).order_by("sequence_id")[:limit]
    return [TimelineEvent(d.sequence_id, d.created_at, DECISION, decision_event_data(d)) for d in rows]


def _anomalies(session: Session, after: int) -> QuerySet[Anomaly]:
    return Anomaly.objects.filter(session_id=session.key, agent_id=session.agent_id, sequence_id__gt=after)


def anomalies_newer(session: Session, after: int) -> QuerySet[Any]:
    return _anomalies(session, after).values("pk")


def anomalies_stream(session: Session, after: int, limit: int) -> list[TimelineEvent]:
    rows = list(_anomalies(session, after).order_by("sequence_id")[:limit])
    if not rows:
        return []
    masked = TimelineMasking()
    return [
        TimelineEvent(
            a.sequence_id,
            a.created_at,
            ANOMALY,
            {
                "code": a.code,
                "point": a.point or None,
                "detail": masked(a.detail, a.point),
                "raw": masked(a.raw, a.point),
                "decision_id": str(a.decision_id) if a.decision_id else None,
            },
        )
        for a in rows
    ]

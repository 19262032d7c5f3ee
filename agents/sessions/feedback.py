"""Feedback hints: short lines for an agent's next prompt when its session keeps going wrong the same way.

Counted once, here: the statements (``rules.decisions.statements``) only fetch a session's latest
``FEEDBACK_LIMIT`` anomaly codes and overruled decisions — as rows (``session_feedback``), or as two
columns of the session's own row on PostgreSQL (``agents.sessions.reads``) — and ``FeedbackBasis``
counts them: an anomaly code or an overruling (rule, outcome) seen at least twice makes a hint.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.db import connection

from agents.sessions.codes import (
    ACTION_NOT_ALLOWED,
    DECISION_MOVE_NOT_ALLOWED,
    FEEDBACK_LIMIT,
    FIELD_INVALID,
    ILLEGAL_TRANSITION,
    RULE_MOVE_NOT_ALLOWED,
)
from agents.sessions.handoff import SESSION_HANDED_OFF
from agents.sessions.models import Anomaly, Session
from rules.decisions import statements
from rules.models import DecisionRecord, RuledBy

_ANOMALY_HINTS = {
    "invalid_candidate_output": (
        "Your last {n} answers were not a usable candidate: reply with one JSON object "
        '{{"decision": ..., "confidence": 0..1, "reason": ...}} and nothing else.'
    ),
    "candidate_not_an_outcome": "You proposed {n} answers that are not outcomes of the point: use its outcomes.",
    ILLEGAL_TRANSITION: "You proposed {n} moves the flow does not allow: propose only allowed_transitions.",
    ACTION_NOT_ALLOWED: "You asked for {n} actions not allowed in their state: use only allowed_actions.",
    DECISION_MOVE_NOT_ALLOWED: "{n} decisions could not move the session as mapped from its state: re-check the flow.",
    FIELD_INVALID: "{n} field values were refused: send each field in its declared type and format.",
    SESSION_HANDED_OFF: "{n} moves of a session a person has were refused: stop driving it until it is returned.",
}


@dataclass(frozen=True)
class FeedbackBasis:
    """A session's feedback read before a decision is logged, to give the hints as they stand after it.

    ``anomalies``: the codes of the session's latest ``limit`` anomalies; ``overruled``: the rule and
    outcome of its latest ``limit`` overruled decisions, newest first.
    """

    anomalies: tuple[str, ...] = ()
    overruled: tuple[tuple[str, str], ...] = ()
    limit: int = FEEDBACK_LIMIT

    def hints(self, *, then: DecisionRecord | None = None) -> list[str]:
        """The hints once ``then`` (logged after this was read, with no anomaly of its own) is in the log:
        what ``session_feedback`` would read at that moment."""
        overruled = list(self.overruled)
        if then is not None and then.overridden and then.ruled_by == RuledBy.HARD_RULE:
            overruled.insert(0, (then.rule_key, then.decision))
        if len(self.anomalies) < 2 and len(overruled) < 2:
            return []  # a hint is of a code or a rule seen twice at least
        # A rule's move the machine refused is not the model's doing: nothing to tell it.
        anomalies = Counter(code for code in self.anomalies[: self.limit] if code != RULE_MOVE_NOT_ALLOWED)
        counts = Counter(overruled[: self.limit])
        rows = [("anomaly", code, "", n) for code, n in anomalies.items() if n >= 2]
        rows += [("overruled", rule, decision, n) for (rule, decision), n in counts.items() if n >= 2]
        return _hints(rows)

    @classmethod
    def from_columns(cls, anomalies: Any, overruled: Any, limit: int) -> FeedbackBasis:
        """From the two JSON columns a session read selects on PostgreSQL (``statements.session_select``)."""
        return cls(
            anomalies=tuple(_json(anomalies)),
            overruled=tuple((rule, decision) for rule, decision in _json(overruled)),
            limit=limit,
        )


def _json(value: Any) -> list[Any]:
    if value is None:
        return []  # an aggregate over no rows
    return json.loads(value) if isinstance(value, str | bytes) else list(value)


def feedback_basis(session: Session, limit: int = FEEDBACK_LIMIT) -> FeedbackBasis:
    """The session's feedback rows, read now in one statement."""
    params: dict[str, Any] = {"agent_id": session.agent_id, "key": session.key, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(statements.feedback_rows(anomaly=Anomaly), params)
        rows = cursor.fetchall()
    anomalies = tuple(code for kind, code, _, _ in rows if kind == "anomaly")
    newest_first = sorted((row for row in rows if row[0] == "overruled"), key=lambda row: row[3], reverse=True)
    return FeedbackBasis(
        anomalies=anomalies, overruled=tuple((rule, decision) for _, rule, decision, _ in newest_first), limit=limit
    )


def session_feedback(session: Session, *, limit: int = FEEDBACK_LIMIT) -> list[str]:
    """Short hints for the agent's next prompt when a session keeps going wrong the same way: the kinds of
    anomaly and of overruled decision seen at least twice among the session's latest ``limit`` of each."""
    return feedback_basis(session, limit).hints()


def _hints(rows: list[tuple[str, str, str, int]]) -> list[str]:
    hints: list[str] = []
    for kind, key, decision, n in sorted(rows):
        if kind == "anomaly":
            template = _ANOMALY_HINTS.get(key, "{n} anomalies '" + key + "' in this session.")
            hints.append(template.format(n=n))
        else:
            hints.append(
                f"Your candidate was overruled {n} times by rule {key}, which decided {decision}: "
                "messages like these are not yours to settle."
            )
    return hints

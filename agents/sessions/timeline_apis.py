"""``GET /api/v1/sessions/<id>/timeline``: an agent reads its session's history, page by page.

The events are the admin's session timeline (``session_timeline``, one selector for both): moves,
decisions, anomalies, queue events and tool-call attempts (``tool_invocation``, ``error_handled``), oldest
first. Text is shown as the decision log keeps it: a
decision's input, reasons and raw output are already masked in the log; the free text kept with the
session as sent (a move's reason, an anomaly's detail and raw output, an operator's note) is masked here
with the same masker — the point's, where the event names one, else the built-in patterns.

A page ends with ``next``, an opaque cursor (``TimelineCursor`` as URL-safe base64 JSON): send it as
``after`` for the events that follow, now or later (a runtime polls with its last ``next``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from agents.errors import InvalidCursor
from agents.sessions.apis import SessionApi
from agents.sessions.selectors import (
    ERROR_HANDLED,
    TimelineCursor,
    TimelineEntry,
    session_get_for_agent,
    session_timeline,
)
from decision_service.api.base import request_agent
from decision_service.errors import InvalidRequest
from rules.config.runtime import engines
from rules.decisions.presenters import timestamp
from rules.engine.compiler import CompileError
from rules.engine.masking import Masker
from rules.errors import EngineUnavailable

LIMIT_DEFAULT, LIMIT_MAX = 50, 200
_BUILTIN = Masker()


def cursor_encode(cursor: TimelineCursor) -> str:
    def position(p: tuple[dt.datetime, Any] | None) -> list[Any] | None:
        return None if p is None else [p[0].isoformat(), p[1]]

    raw = {"t": cursor.seq, "d": position(cursor.decision), "a": position(cursor.anomaly), "q": position(cursor.queue)}
    # The tool-call streams only once a page passed one of their events: a cursor of a session without
    # tool calls reads as it did before they were recorded.
    if cursor.tool is not None:
        raw["i"] = position(cursor.tool)
    if cursor.tool_error is not None:
        raw["e"] = position(cursor.tool_error)
    return base64.urlsafe_b64encode(json.dumps(raw, separators=(",", ":")).encode()).decode().rstrip("=")


def cursor_decode(text: str) -> TimelineCursor:
    """The cursor ``cursor_encode`` wrote; anything else is ``invalid_cursor``."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        seq = raw["t"]
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise ValueError(seq)
        return TimelineCursor(
            seq=seq,
            decision=_position(raw["d"], str),
            anomaly=_position(raw["a"], int),
            queue=_position(raw["q"], int),
            # Absent from cursors given out before tool calls were recorded: those pages had none to skip.
            tool=_position(raw.get("i"), int),
            tool_error=_position(raw.get("e"), int),
        )
    except (ValueError, TypeError, KeyError, AttributeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidCursor(
            "'after' is not a cursor this timeline gave out; start again without it.",
            errors={"after": ["Not a cursor from a timeline page's 'next'."]},
        ) from exc


def _position(value: Any, pk_type: type) -> tuple[dt.datetime, Any] | None:
    if value is None:
        return None
    at, pk = value  # a ValueError or TypeError if it is not a pair
    if not isinstance(at, str) or type(pk) is not pk_type:
        raise ValueError(value)
    moment = dt.datetime.fromisoformat(at)
    if moment.tzinfo is None:
        raise ValueError(at)
    return moment, pk


def _limit(request: Request) -> int:
    text = request.query_params.get("limit")
    if text is None:
        return LIMIT_DEFAULT
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= LIMIT_MAX:
        raise InvalidRequest("'limit' must be a whole number.", errors={"limit": [f"An integer in 1 … {LIMIT_MAX}."]})
    return int(text)


class _Masking:
    """Masks text as the decision log of ``point`` would (the built-in patterns where there is no such point)."""

    def __init__(self) -> None:
        try:
            self._config = engines.current()
        except CompileError as exc:
            raise EngineUnavailable(str(exc)) from exc

    def __call__(self, text: str, point: str) -> str:
        if not text:
            return text
        compiled = self._config.point(point) if point else None
        return (compiled.masker if compiled is not None else _BUILTIN).mask(text).text


def timeline_entry_body(entry: TimelineEntry, _masked: _Masking) -> dict[str, Any]:
    """One event as the agent API shows it: ``type``, ``at`` and the type's own fields."""
    body: dict[str, Any] = {"type": entry.kind, "at": timestamp(entry.at)}
    if entry.transition is not None:
        t = entry.transition
        point = t.decision.point if t.decision is not None else ""
        body.update(
            seq=t.seq,
            kind=t.kind,
            actor=t.actor,
            reason=_masked(t.reason, point),
            decision_id=str(t.decision_id) if t.decision_id else None,
            fields=t.fields_changed,  # masked when written (agents.sessions.fields): no pii to hide here
            **{"from": t.from_state, "to": t.to_state},
        )
    elif entry.decision is not None:
        d = entry.decision
        body.update(
            id=str(d.pk),
            point=d.point,
            input=d.input,
            session_state=d.session_state or None,
            candidate=None
            if not d.candidate_decision
            else {"decision": d.candidate_decision, "confidence": d.candidate_confidence, "reason": d.candidate_reason},
            candidate_invalid=d.candidate_invalid,
            decision=d.decision,
            ruled_by=d.ruled_by,
            rule=d.rule_key or None,
            overridden=d.overridden,
            reason=d.reason,
            revision=d.revision,
        )
    elif entry.attempt is not None:
        body.update(_attempt_body(entry))
    elif entry.anomaly is not None:
        a = entry.anomaly
        body.update(
            code=a.code,
            point=a.point or None,
            detail=_masked(a.detail, a.point),
            raw=_masked(a.raw, a.point),
            decision_id=str(a.decision_id) if a.decision_id else None,
        )
    else:
        q = entry.queue_event
        body.update(kind=q.kind, actor=q.actor, state=q.state, note=_masked(q.note, ""))
    return body


def _attempt_body(entry: TimelineEntry) -> dict[str, Any]:
    """A tool-call attempt's event. Its input, message and output summary were masked when written
    (``agents.tools``), the summary cut short; ``outcome`` and what follows it are null while in flight."""
    a, call = entry.attempt, entry.attempt.call
    body: dict[str, Any] = {"operation_id": call.operation_id, "tool": a.tool, "attempt": a.attempt}
    if entry.kind == ERROR_HANDLED:
        body.update(code=a.error_code, declared=a.declared, message=a.message, next=entry.tool_next)
    else:
        body.update(
            input=call.input,
            breaker_state=a.breaker_state,
            deadline=timestamp(a.deadline),
            outcome=a.outcome or None,
            output_summary=a.output_summary or None,
            finished_at=timestamp(a.finished_at) if a.finished_at else None,
            late=a.finished_at > a.deadline if a.finished_at else None,
        )
    body["duration_ms"] = a.duration_ms
    return body


class SessionTimelineApi(SessionApi):
    def get(self, request: Request, session_id: str) -> Response:
        # Another agent's session is unknown before anything about the query is judged.
        session = session_get_for_agent(agent=request_agent(request), session_id=session_id)
        unknown = sorted(set(request.query_params) - {"after", "limit"})
        if unknown:  # refused, not ignored: a misspelt ``after`` would silently start from the beginning
            raise InvalidRequest(
                f"Unknown query parameters: {', '.join(map(repr, unknown))} (this operation takes: after, limit).",
                errors={name: ["Not a query parameter of this operation."] for name in unknown},
            )
        after_text = request.query_params.get("after")
        after = TimelineCursor() if after_text is None else cursor_decode(after_text)
        limit = _limit(request)
        entries = session_timeline(session, after=after, limit=limit + 1)
        page = entries[:limit]
        masking = _Masking()
        return Response(
            {
                "session_id": session.key,
                "events": [timeline_entry_body(e, masking) for e in page],
                "next": cursor_encode(after.following(page)),
                "has_more": len(entries) > limit,
            }
        )

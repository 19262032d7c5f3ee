"""``GET /api/v1/sessions/<id>/timeline`` and ``…/changes``: an agent reads its session's story in the
service-wide order, page by page, or waits for what comes next.

The events are every registered timeline stream's (``agents.sessions.timeline``): moves, field changes,
decisions, anomalies, queue events, tool-call attempts and results — each with its ``sequence_id``,
``type`` and ``at``, masked as the decision log is. ``after`` is a sequence id (the last one seen; 0 or
absent: from the beginning) and a page's ``next`` the last sequence id on it (``after`` again when the page
is empty), so a runtime sends it back for what follows, now or later.

The opaque cursors given out before the sequence existed are refused (``invalid_cursor``), saying to send
a sequence id instead: they named positions in per-table orders the sequence replaced.

``changes`` answers at once when an event after ``after`` exists, otherwise waits up to ``wait`` seconds
(at most ``WAIT_MAX``) for one (``agents.sessions.changes``), and answers with the session's state too:
whether a person has it (``handed_off``, ``claimed_by``) is what a runtime must know before it speaks.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from agents.errors import InvalidCursor
from agents.sessions.apis import SessionApi
from agents.sessions.changes import changes_watch, connection_release_when_done
from agents.sessions.models import Session
from agents.sessions.presenters import session_state
from agents.sessions.selectors import session_get_for_agent
from agents.sessions.timeline import TimelineEvent, session_events
from decision_service.api.base import request_agent
from decision_service.errors import InvalidRequest
from rules.decisions.presenters import timestamp

LIMIT_DEFAULT, LIMIT_MAX = 50, 200
WAIT_MAX = 30


def event_body(event: TimelineEvent) -> dict[str, Any]:
    """One event as the agent API shows it: ``sequence_id``, ``type``, ``at`` and the type's own fields."""
    return {"sequence_id": event.sequence_id, "type": event.type, "at": timestamp(event.at), **event.data}


def _only(request: Request, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:  # refused, not ignored: a misspelt ``after`` would silently start from the beginning
        raise InvalidRequest(
            f"Unknown query parameters: {', '.join(map(repr, unknown))} (this operation takes: {', '.join(allowed)}).",
            errors={name: ["Not a query parameter of this operation."] for name in unknown},
        )


def _whole(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 18  # under 2**63: a bigint


def _after(request: Request) -> int:
    text = request.query_params.get("after")
    if text is None:
        return 0
    if not _whole(text):
        raise InvalidCursor(
            "'after' is a sequence id: the 'next' of a timeline page or a changes answer (a whole number "
            "≥ 0); cursors of the timeline's earlier form are no longer read.",
            errors={"after": ["A sequence id: a whole number ≥ 0."]},
        )
    return int(text)


def _bounded(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not _whole(text) or not low <= int(text) <= high:
        raise InvalidRequest(
            f"'{name}' must be a whole number from {low} to {high}.",
            errors={name: [f"An integer in {low} … {high}."]},
        )
    return int(text)


def _session(request: Request, session_id: str) -> Session:
    # Another agent's session is unknown before anything about the query is judged.
    return session_get_for_agent(agent=request_agent(request), session_id=session_id)


class SessionTimelineApi(SessionApi):
    def get(self, request: Request, session_id: str) -> Response:
        session = _session(request, session_id)
        _only(request, ("after", "limit"))
        after = _after(request)
        limit = _bounded(request, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)
        events = session_events(session, after=after, limit=limit + 1)
        page = events[:limit]
        return Response(
            {
                "session_id": session.key,
                "events": [event_body(e) for e in page],
                "next": page[-1].sequence_id if page else after,
                "has_more": len(events) > limit,
            }
        )


class SessionChangesApi(SessionApi):
    def get(self, request: Request, session_id: str) -> Response:
        session = _session(request, session_id)
        _only(request, ("after", "wait", "limit"))
        after = _after(request)
        wait = _bounded(request, "wait", 0, 0, WAIT_MAX)
        limit = _bounded(request, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)
        events = session_events(session, after=after, limit=limit + 1)
        waited = not events and wait > 0
        if waited and changes_watch.wait(session, after=after, seconds=wait):
            events = session_events(session, after=after, limit=limit + 1)
        page = events[:limit]
        if page:  # what it is now: the events may have moved it, or a person taken it
            session = Session.objects.select_related("machine", "claimed_by").get(pk=session.pk)
        body = {
            "session_id": session.key,
            "events": [event_body(e) for e in page],
            "next": page[-1].sequence_id if page else after,
            "has_more": len(events) > limit,
            "session": session_state(session),
        }
        if waited:
            connection_release_when_done()
        return Response(body)

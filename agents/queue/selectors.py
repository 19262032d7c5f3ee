"""Reads of the human queue: the sessions waiting for a person, and why."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, CharField, F, OuterRef, QuerySet, Subquery, Value, When
from django.utils.translation import gettext_lazy as _

from agents.sessions.handoff import (
    REASON_AGENT,
    REASON_APPROVAL,
    REASON_FALLBACK,
    REASON_MODEL_FAILURE,
    REASON_RULE,
    REASON_STARTED,
    REASON_TIMEOUT,
    REASON_TOOL_FAILURE,
    REASON_UNKNOWN,
)
from agents.sessions.models import Session, Transition
from agents.sessions.selectors import session_list, sessions_in_handoff_q
from rules.hooks import Hook
from rules.models import StateMachine


def session_human_queue(*, machines: list[StateMachine] | None = None) -> QuerySet[Session]:
    """Sessions waiting for a person: in their machine's handoff state, the longest waiting first.

    Each carries the move that brought it there (the transition numbered with the session's current
    ``seq``, found through the (session, seq) unique index): ``last_kind``, ``last_reason``,
    ``last_actor``, ``last_from`` and ``last_at`` (all None for a session that started in the handoff state).
    """
    last = Transition.objects.filter(session=OuterRef("pk"), seq=OuterRef("seq")).order_by()
    return (
        session_list()
        .filter(sessions_in_handoff_q(machines))
        .annotate(
            last_kind=Subquery(last.values("kind")[:1]),
            last_reason=Subquery(last.values("reason")[:1]),
            last_actor=Subquery(last.values("actor")[:1]),
            last_from=Subquery(last.values("from_state")[:1]),
            last_at=Subquery(last.values("created_at")[:1]),
        )
        .annotate(
            # For the ``reason`` filter only: the same rule as ``session_handoff_reason`` (which every
            # answer and page shows), in SQL, for sessions already known to be in their handoff state.
            queue_reason=Case(
                When(handoff_reason="", then=Value(REASON_UNKNOWN)),
                default=F("handoff_reason"),
                output_field=CharField(),
            )
        )
        .select_related("claimed_by")
        .order_by("state_entered_at", "pk")
    )


# Why a session is waiting for a person (``Session.handoff_reason``, set by the move that brought it there).
QUEUE_REASONS = {
    REASON_RULE: _("rule"),
    REASON_FALLBACK: _("fallback after a decision"),
    REASON_TIMEOUT: _("timeout"),
    REASON_MODEL_FAILURE: _("model failure"),
    REASON_AGENT: _("moved by the agent"),
    REASON_STARTED: _("started there"),
    REASON_APPROVAL: _("a tool call awaits approval"),
    REASON_TOOL_FAILURE: _("a tool call gave up"),
    REASON_UNKNOWN: _("unknown"),
}
MINE, UNCLAIMED, CLAIMED = "mine", "unclaimed", "claimed"


def human_queue_list(*, holder: str = "", user: Any = None, reason: str = "") -> QuerySet[Session]:
    """The human queue (``session_human_queue``), oldest first, filtered: ``holder`` is "mine" (held by
    ``user``), "unclaimed" or "claimed"; ``reason`` one of ``QUEUE_REASONS``. Empty means no filter."""
    queue = session_human_queue()
    if holder == MINE:
        queue = queue.filter(claimed_by_id=getattr(user, "pk", None))
    elif holder == UNCLAIMED:
        queue = queue.filter(claimed_by__isnull=True)
    elif holder == CLAIMED:
        queue = queue.filter(claimed_by__isnull=False)
    if reason:
        queue = queue.filter(queue_reason=reason)  # type: ignore[misc]  # an annotation the stubs do not see
    return queue


def human_queue_get(*, pk: int) -> Session | None:
    """One session of the human queue (annotated as in ``session_human_queue``), or None when it is not waiting."""
    return session_human_queue().filter(pk=pk).first()


# What the queue shows of a session that waits for a tool call's approval. The tool calls are a room
# above the queue (agents.tools), which the queue does not import: it registers its provider in
# ``AgentsConfig.ready()``. Called with ``sessions`` (a list from ``session_human_queue``); answers
# {session pk: the proposed call (id, operation_id, tool, input masked, risk, state, asked_at)}.
proposed_calls_asking: Hook[dict[int, dict[str, Any]]] = Hook("proposed_calls_asking")


def human_queue_proposed_calls(sessions: list[Session]) -> dict[int, dict[str, Any]]:
    """The tool call each waiting session asks a person to approve, by session pk (absent: none)."""
    found: dict[int, dict[str, Any]] = {}
    for answer in proposed_calls_asking.ask(sessions=sessions):
        found.update(answer)
    return found

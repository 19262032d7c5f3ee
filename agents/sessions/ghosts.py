"""Ghost failures (seed 000 §4.2): a decision told the runtime where its session goes, and the session
never got there — the runtime updated its own fields, or went on talking, and forgot the move.

A decision is judged once ``ARBITER_GHOST_FAILURE_SECONDS`` have passed since it was made. It is a ghost
failure when it was made about a session Arbiter knew (its log row names the state the session was in),
its point maps its final decision to a state other than that one, and no move of the session entered
that state within the time. Decisions of ``apply=true`` that moved are therefore never ghosts; one whose
mapped move the machine refused (and that fell back) is, as is one left waiting for missing fields: the
mapped state was not reached, whatever the reason, and its anomaly says why.

The map is the point's *current* ``state_map``: a decision made under an older map is judged by today's
(a point's map rarely changes, and reading every revision's would cost more than it tells).

Nothing here runs on the decide path: the decision-point map (``rules.hooks.report_ghost_failures``)
and ``/metrics`` (``ghost_failure_metrics``, at scrape time) read the log and the moves when asked.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    QuerySet,
    Value,
    When,
)
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from agents.sessions.models import Transition
from rules.models import DecisionPoint, DecisionRecord

# The examples the map lists per point, newest first (the count covers them all).
LATEST = 20
# /metrics shows the ghost failures among decisions whose time ran out this recently: a sliding window
# short enough for a scrape to read only a few minutes of the log.
METRIC_WINDOW = dt.timedelta(minutes=15)


def ghost_failure_after() -> dt.timedelta:
    """How long a session has to reach its decision's mapped state (``ARBITER_GHOST_FAILURE_SECONDS``)."""
    return dt.timedelta(seconds=max(int(settings.ARBITER_GHOST_FAILURE_SECONDS), 1))


def _mapped_states(points: list[str] | None) -> dict[tuple[str, str], str]:
    rows = DecisionPoint.objects.exclude(machine=None).values_list("key", "state_map")
    if points is not None:
        rows = rows.filter(key__in=points)
    return {(key, outcome): state for key, state_map in rows for outcome, state in (state_map or {}).items() if state}


def ghost_failures(
    *,
    made_from: dt.datetime,
    made_until: dt.datetime,
    after: dt.timedelta,
    points: list[str] | None = None,
    targets: dict[tuple[str, str], str] | None = None,
) -> QuerySet[DecisionRecord]:
    """The ghost failures among decisions made in ``[made_from, made_until]`` (the caller keeps
    ``made_until`` at least ``after`` in the past: a younger decision has not had its time yet), each
    annotated with ``mapped_state``. One statement when evaluated (and one to read the points' maps,
    unless ``targets`` gives them)."""
    targets = _mapped_states(points) if targets is None else targets
    if not targets:
        return DecisionRecord.objects.none()
    mapped = Case(
        *[When(point=point, decision=outcome, then=Value(state)) for (point, outcome), state in targets.items()],
        default=Value(""),
        output_field=CharField(),
    )
    deadline = ExpressionWrapper(OuterRef("created_at") + Value(after, DurationField()), output_field=DateTimeField())
    reached = Transition.objects.filter(
        session__agent_id=OuterRef("agent_id"),
        session__key=OuterRef("session_id"),
        to_state=OuterRef("mapped_state"),
        created_at__gte=OuterRef("created_at"),
        created_at__lte=deadline,
    )
    return (
        DecisionRecord.objects.filter(
            created_at__gte=made_from, created_at__lte=made_until, point__in={point for point, _ in targets}
        )
        .exclude(session_id="")
        .exclude(session_state="")
        .annotate(mapped_state=mapped)
        .exclude(mapped_state="")
        .exclude(mapped_state=F("session_state"))
        .exclude(Exists(reached))
    )


# What the map shows of each (``mapped_state`` is the query's annotation).
SHOWN = ("id", "created_at", "session_id", "session_state", "decision", "mapped_state")


def ghost_failures_by_point(
    *, start: dt.datetime, end: dt.datetime, points: list[str] | None = None, **_: Any
) -> dict[str, dict[str, Any]]:
    """For the decision-point map (``rules.hooks.report_ghost_failures``): per point, how many decisions
    made in ``[start, end - after]`` are ghost failures, and the latest ``LATEST`` of them."""
    after = ghost_failure_after()
    found = ghost_failures(made_from=start, made_until=end - after, after=after, points=points)
    counts = dict(found.values_list("point").annotate(n=Count("id")).order_by())
    latest: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for point in counts:
        rows = found.filter(point=point).order_by("-created_at")[:LATEST]
        for row in rows.values(*SHOWN):
            latest[point].append({**row, "id": str(row["id"])})
    return {point: {"count": n, "latest": latest[point]} for point, n in counts.items()}


def ghost_failure_metrics(*, now: dt.datetime | None = None, **_: Any) -> list[GaugeMetricFamily]:
    """``/metrics`` at scrape time: ghost failures among decisions whose time ran out in the last
    ``METRIC_WINDOW``, by point (one grouped statement over that stretch of the log)."""
    now = now or timezone.now()
    after = ghost_failure_after()
    targets = _mapped_states(None)
    found = ghost_failures(made_from=now - after - METRIC_WINDOW, made_until=now - after, after=after, targets=targets)
    counts = dict(found.values_list("point").annotate(n=Count("id")).order_by())
    gauge = GaugeMetricFamily(
        "arbiter_ghost_failures_recent",
        "Decisions whose session did not reach the mapped state within ARBITER_GHOST_FAILURE_SECONDS, among "
        "those whose time ran out in the last 15 minutes, by point (read at scrape time).",
        labels=["point"],
    )
    for point in sorted(set(counts) | {key for key, _ in targets}):
        gauge.add_metric([point], counts.get(point, 0))
    return [gauge]

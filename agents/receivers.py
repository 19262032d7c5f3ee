"""What agents answers when the configuration asks (``rules.hooks``); registered in ``AgentsConfig.ready()``."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from django.db.models import Count
from django.urls import reverse
from django.utils.translation import gettext

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_set_points
from agents.sessions.models import Anomaly, Session
from rules.config.revisions import Actor
from rules.decisions.retention import queryset_delete_in_batches
from rules.models import DecisionPoint, DecisionRecord, StateMachine


def drop_deleted_point(*, point: DecisionPoint, actor: Actor, reason: str, **_: Any) -> None:
    """Agents that could call a deleted point lose access to it, recorded in their history."""
    for agent in list(point.agents.all()):
        keep = [p.key for p in agent.points.all() if p.pk != point.pk]
        agent_set_points(agent=agent, point_keys=keep, actor=actor, reason=reason)


def removal_notes(*, keys: list[str], **_: Any) -> dict[str, str]:
    """For an import's diff: the agent runtimes that lose access to the points it deletes."""
    users: dict[str, list[str]] = defaultdict(list)
    for agent in AgentRuntime.objects.filter(points__key__in=keys).prefetch_related("points").order_by("name"):
        for point in agent.points.all():
            if point.key in keys:
                users[point.key].append(agent.name)
    return {key: f"agents {', '.join(names)} lose access to it" for key, names in users.items()}


def stranded_sessions(*, machine: StateMachine, **_: Any) -> dict[str, str]:
    """A machine may not drop a state that sessions are still in."""
    stranded = sorted(
        set(
            Session.objects.filter(machine_id=machine.pk)
            .exclude(state__in=machine.states)
            .values_list("state", flat=True)
            .distinct()
        )
    )
    if stranded:
        return {"states": gettext("Sessions are still in these states: %(states)s.") % {"states": ", ".join(stranded)}}
    return {}


def machine_has_sessions(*, machine: StateMachine, **_: Any) -> str | None:
    if Session.objects.filter(machine_id=machine.pk).exists():
        return f"{machine.key} has sessions; it cannot be deleted while they are kept."
    return None


def purge_anomalies(*, cutoff: dt.datetime, batch_size: int, **_: Any) -> int:
    return queryset_delete_in_batches(
        Anomaly.objects.filter(created_at__lt=cutoff), order_by="created_at", batch_size=batch_size
    )


def decision_anomalies(*, record: DecisionRecord, **_: Any) -> dict[str, Any]:
    """The anomalies a decision raised, for its why panel in the admin."""
    return {
        "anomalies": [
            {
                "url": reverse("admin:agents_anomaly_change", args=[a.pk]),
                "created_at": a.created_at,
                "code": a.code,
                "detail": a.detail,
            }
            for a in Anomaly.objects.filter(decision_id=record.pk).order_by("created_at")
        ]
    }


def point_anomaly_counts(
    *, start: dt.datetime, end: dt.datetime, points: list[str] | None, **_: Any
) -> dict[str, list[tuple[str, str, str, int]]]:
    """For the decision-point map: anomalies per point, code, and the model and prompt version logged on
    the decision that raised them, in the window (anomalies of no point, e.g. a forbidden transition an
    agent asked for directly, belong to no point and are not counted; those of no decision, or of a
    decision without the model's name, count under "" — the map's "unknown")."""
    rows = Anomaly.objects.filter(created_at__gte=start, created_at__lte=end).exclude(point="")
    if points is not None:
        rows = rows.filter(point__in=points)
    counts: dict[str, list[tuple[str, str, str, int]]] = defaultdict(list)
    grouped = rows.values("point", "code", "decision__llm_model", "decision__llm_prompt_version")
    for row in grouped.annotate(n=Count("id")).order_by():
        model, prompt_version = row["decision__llm_model"] or "", row["decision__llm_prompt_version"] or ""
        counts[row["point"]].append((row["code"], model, prompt_version, row["n"]))
    return dict(counts)

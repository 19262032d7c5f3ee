"""Writes to agent runtimes, each recording who and why."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from agents.runtimes.models import AgentRuntime
from decision_service.tokens import AGENT_TOKEN_PREFIX, new_token, token_hash
from rules.config.revisions import Actor, audited_save, config_change
from rules.models import DecisionPoint

TOKEN_PREFIX = AGENT_TOKEN_PREFIX


def _new_token() -> str:
    return new_token(AGENT_TOKEN_PREFIX)


def _points_by_key(keys: Iterable[str]) -> list[DecisionPoint]:
    keys = list(dict.fromkeys(k.strip() for k in keys if k.strip()))
    found = {p.key: p for p in DecisionPoint.objects.filter(key__in=keys)}
    missing = [k for k in keys if k not in found]
    if missing:
        raise ValidationError(gettext("Unknown decision point: %(points)s.") % {"points": ", ".join(missing)})
    return [found[k] for k in keys]


def agent_create(
    *,
    name: str,
    point_keys: Iterable[str],
    actor: Actor,
    reason: str,
    description: str = "",
    is_active: bool = True,
    rate_per_minute: int | None = None,
    rate_burst: int | None = None,
) -> tuple[AgentRuntime, str]:
    """Create an agent runtime and return it with its token — the only time the token is seen."""
    points = _points_by_key(point_keys)
    token = _new_token()
    agent = AgentRuntime(
        name=name,
        description=description,
        is_active=is_active,
        rate_per_minute=rate_per_minute,
        rate_burst=rate_burst,
        token_hash=token_hash(token),
        token_prefix=token[:12],
    )
    with config_change(actor=actor, reason=reason):
        audited_save(agent, actor=actor, reason=reason)
        agent.points.set(points)
    return agent, token


def agent_rotate_token(*, agent: AgentRuntime, actor: Actor, reason: str) -> str:
    """Replace the agent's token; the old one stops working at once."""
    token = _new_token()
    agent.token_hash = token_hash(token)
    agent.token_prefix = token[:12]
    audited_save(agent, actor=actor, reason=reason)
    return token


def agent_set_points(*, agent: AgentRuntime, point_keys: Iterable[str], actor: Actor, reason: str) -> AgentRuntime:
    points = _points_by_key(point_keys)
    with config_change(actor=actor, reason=reason):
        # The m2m change writes its own history row when the points are set: who and why must be known
        # before that, not only when the agent itself is saved.
        agent._history_user = actor  # type: ignore[attr-defined]
        agent._change_reason = reason  # type: ignore[attr-defined]
        agent.points.set(points)
        audited_save(agent, actor=actor, reason=reason)
    return agent


def agent_change_points(
    *, agent: AgentRuntime, add: Iterable[str] = (), remove: Iterable[str] = (), actor: Actor, reason: str
) -> AgentRuntime:
    """Grant the points ``add`` and revoke the points ``remove``, keeping the agent's token and its other
    points. Not held for approval: which points an agent may ask changes no rule's decision (docs/governance.md)."""
    add, remove = [k.strip() for k in add if k.strip()], {k.strip() for k in remove if k.strip()}
    both = sorted(remove.intersection(add))
    if both:
        raise ValidationError(gettext("Both granted and revoked: %(points)s.") % {"points": ", ".join(both)})
    _points_by_key([*add, *remove])  # every key named must be a point
    current = [p.key for p in agent.points.all()]
    keys = [k for k in current if k not in remove] + [k for k in add if k not in current]
    return agent_set_points(agent=agent, point_keys=keys, actor=actor, reason=reason)


def agent_save(*, agent: AgentRuntime, actor: Actor, reason: str) -> AgentRuntime:
    audited_save(agent, actor=actor, reason=reason)
    return agent

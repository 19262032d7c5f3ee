"""Reads of agent runtimes: by token, and as the principal API calls see."""

from __future__ import annotations

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import token_hash
from decision_service.principals import AgentPrincipal


def agent_get_by_token(*, token: str) -> AgentRuntime | None:
    return AgentRuntime.objects.filter(token_hash=token_hash(token), is_active=True).first()


def agent_principal(agent: AgentRuntime) -> AgentPrincipal:
    """What API calls see of an agent runtime: its id, name and the keys of the points it may ask."""
    return AgentPrincipal(
        pk=agent.pk,
        name=agent.name,
        points=frozenset(p.key for p in agent.points.all()),
        rate_per_minute=agent.rate_per_minute,
        rate_burst=agent.rate_burst,
    )


def agent_principal_by_token(*, token: str) -> AgentPrincipal | None:
    """The principal of an active agent's token, or None (read now; the API uses ``principal_cache``)."""
    return agent_principal_by_hash(digest=token_hash(token))


def agent_principal_by_hash(*, digest: str) -> AgentPrincipal | None:
    """The principal of the active agent whose token hashes to ``digest``, or None: one query."""
    rows = list(
        AgentRuntime.objects.filter(token_hash=digest, is_active=True)
        .values_list("pk", "name", "rate_per_minute", "rate_burst", "points__key")
        .order_by()
    )
    if not rows:
        return None
    pk, name, rate, burst, _ = rows[0]
    # The rate limit comes with the agent, in the same query: the throttle reads no row of its own.
    return AgentPrincipal(
        pk=pk,
        name=name,
        points=frozenset(row[-1] for row in rows if row[-1] is not None),
        rate_per_minute=rate,
        rate_burst=burst,
    )

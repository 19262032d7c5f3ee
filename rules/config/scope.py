"""Which decision points an agent runtime may ask: its scope travels with its principal."""

from __future__ import annotations

from decision_service.principals import AgentPrincipal
from rules.errors import PointNotAllowed


def point_allowed_check(*, agent: AgentPrincipal, point_key: str) -> None:
    if point_key not in agent.points:
        raise PointNotAllowed(f"Agent '{agent.name}' may not call decision point '{point_key}'.")

"""Who is calling: the principals the API's authentication classes put on ``request.user``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AgentPrincipal:
    """An agent runtime on an API call: its id, its name (which never changes) and the points it may ask.

    Built by the agents app's token authentication; apps below agents see the agent only through it.
    """

    pk: int
    name: str
    points: frozenset[str]
    # The agent's rate limit (requests a minute, burst), read with the agent: no query of its own.
    rate_per_minute: int | None = None
    rate_burst: int | None = None

    is_authenticated = True
    is_anonymous = False

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class StaffCredential:
    """``request.auth`` when a staff user's API token authenticated the call (``request.user`` is the user)."""

    token_prefix: str

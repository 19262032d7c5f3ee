from __future__ import annotations

from agents.models import AgentRuntime
from agents.services import token_hash


def agent_get_by_token(*, token: str) -> AgentRuntime | None:
    return AgentRuntime.objects.filter(token_hash=token_hash(token), is_active=True).first()

from __future__ import annotations

from agents.errors import UnknownSession
from agents.models import AgentRuntime, Anomaly, Session
from agents.services.runtimes import token_hash


def agent_get_by_token(*, token: str) -> AgentRuntime | None:
    return AgentRuntime.objects.filter(token_hash=token_hash(token), is_active=True).first()


def session_get_for_agent(*, agent: AgentRuntime, session_id: str) -> Session:
    session = Session.objects.select_related("machine").filter(agent=agent, key=session_id).first()
    if session is None:
        raise UnknownSession(f"This agent has no session '{session_id}'.")
    return session


def session_latest_anomaly_codes(session: Session, *, limit: int = 5) -> list[str]:
    return list(
        Anomaly.objects.filter(agent_id=session.agent_id, session_id=session.key)
        .order_by("-created_at", "-pk")
        .values_list("code", flat=True)[:limit]
    )

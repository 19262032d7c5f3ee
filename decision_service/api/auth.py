"""Bearer-token authentication for agent runtimes."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agents.models import AgentRuntime
from agents.selectors import agent_get_by_token


class AgentPrincipal:
    """What ``request.user`` is for an API call: the agent runtime behind the token."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, agent: AgentRuntime) -> None:
        self.agent = agent

    def __str__(self) -> str:
        return self.agent.name


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AgentPrincipal, AgentRuntime] | None:
        header = authentication.get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower().encode():
            raise exceptions.AuthenticationFailed("Send the agent token as 'Authorization: Bearer <token>'.")
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("The token is not valid.") from exc
        agent = agent_get_by_token(token=token)
        if agent is None:
            raise exceptions.AuthenticationFailed("The token is not valid, or its agent is inactive.")
        return AgentPrincipal(agent), agent

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def request_agent(request: Any) -> AgentRuntime:
    principal = request.user
    assert isinstance(principal, AgentPrincipal)
    return principal.agent

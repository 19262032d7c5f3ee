"""Bearer-token authentication for agent runtimes (named in ``REST_FRAMEWORK`` by dotted path)."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agents.runtimes import principal_cache
from decision_service.principals import AgentPrincipal


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AgentPrincipal, AgentPrincipal] | None:
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
        principal = principal_cache.principal_for_token(token)
        if principal is None:
            raise exceptions.AuthenticationFailed("The token is not valid, or its agent is inactive.")
        return principal, principal

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

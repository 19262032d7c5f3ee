"""What every agent-facing API view shares: the principal, the body parser, the Idempotency-Key header.

Which class authenticates an agent token is configured, not imported: ``REST_FRAMEWORK``'s
``DEFAULT_AUTHENTICATION_CLASSES`` names it by dotted path (it lives with the tokens, in ``agents``), so
this module and the apps whose views build on it depend on no app.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from decision_service.api.parsers import LimitedJSONParser
from decision_service.errors import InvalidRequest
from decision_service.principals import AgentPrincipal

IDEMPOTENCY_KEY_MAX = 200

__all__ = ["AgentApi", "AgentPrincipal", "IsAgent", "idempotency_key", "request_agent"]


class IsAgent(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, AgentPrincipal)


class AgentApi(APIView):
    permission_classes = [IsAgent]
    parser_classes = [LimitedJSONParser]


def request_agent(request: Any) -> AgentPrincipal:
    principal = request.user
    assert isinstance(principal, AgentPrincipal)
    return principal


def idempotency_key(request: Request) -> str:
    """The ``Idempotency-Key`` header, trimmed ("" when absent); refused when longer than 200 characters
    or holding a NUL character."""
    key = request.headers.get("Idempotency-Key", "").strip()
    if len(key) > IDEMPOTENCY_KEY_MAX:
        raise InvalidRequest(
            "The Idempotency-Key header is too long.",
            errors={"Idempotency-Key": [f"At most {IDEMPOTENCY_KEY_MAX} characters."]},
        )
    if "\x00" in key:  # HTTP forbids it, but a server may pass it on; PostgreSQL cannot store it
        raise InvalidRequest(
            "The Idempotency-Key header holds a NUL character.",
            errors={"Idempotency-Key": ["Must not contain NUL characters."]},
        )
    return key

"""What every agent-facing API view shares: the principal, the body parser, the Idempotency-Key header.

Which class authenticates an agent token is configured, not imported: ``REST_FRAMEWORK``'s
``DEFAULT_AUTHENTICATION_CLASSES`` names it by dotted path (it lives with the tokens, in ``agents``), so
this module and the apps whose views build on it depend on no app.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from decision_service.api.parsers import LimitedJSONParser, StaffJSONParser
from decision_service.errors import InvalidRequest
from decision_service.principals import AgentPrincipal, StaffCredential

IDEMPOTENCY_KEY_MAX = 200

__all__ = [
    "AgentApi",
    "AgentPrincipal",
    "IsAgent",
    "IsStaffToken",
    "StaffApi",
    "idempotency_key",
    "request_agent",
    "require_permission",
    "route",
]


class IsAgent(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, AgentPrincipal)


class IsStaffToken(BasePermission):
    """A staff user's API token: an agent's token is refused here (403), as a staff token is on agent views."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return (
            isinstance(request.auth, StaffCredential)
            and bool(getattr(user, "is_active", False))
            and bool(getattr(user, "is_staff", False))
        )


class AgentApi(APIView):
    permission_classes = [IsAgent]
    parser_classes = [LimitedJSONParser]


class StaffApi(APIView):
    """Views for staff automation (change requests, the human queue): staff API tokens only.

    A query parameter the view does not name in ``query_parameters`` is refused (``422 invalid_request``)
    rather than ignored: a misspelt filter (``?stat=pending``) would otherwise answer everything.
    """

    permission_classes = [IsStaffToken]
    parser_classes = [StaffJSONParser]
    query_parameters: tuple[str, ...] = ()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication and permissions first: 401, 403
        unknown = sorted(set(request.query_params) - set(self.query_parameters))
        if unknown:
            known = ", ".join(self.query_parameters) or "none"
            raise InvalidRequest(
                f"Unknown query parameters: {', '.join(map(repr, unknown))} (this operation takes: {known}).",
                errors={name: ["Not a query parameter of this operation."] for name in unknown},
            )


def require_permission(request: Request, permission: str) -> None:
    """Refuse (403 ``permission_denied``) a staff user without ``permission``: a staff token says who
    calls, not what they may read, so each staff read asks for what its admin page asks for."""
    if not request.user.has_perm(permission):
        raise exceptions.PermissionDenied(f"This needs the {permission} permission.")


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


def route(*views: type[APIView]) -> type[APIView]:
    """One route for several one-operation views (GET lists, POST creates): a view class with each
    view's handler, so a wrong method is refused with the route's whole ``Allow`` list."""
    members: dict[str, Any] = {}
    for view in views:
        for name, member in vars(view).items():
            if name in members and name not in {"__module__", "__doc__", "__qualname__"}:
                raise TypeError(f"{view.__name__}.{name} is defined by two views of the route")
            if not name.startswith("__"):
                members[name] = member
    name = "".join(v.__name__.removesuffix("Api") for v in views) + "Api"
    return type(name, (views[0].__mro__[1],), {**members, "__module__": views[0].__module__})

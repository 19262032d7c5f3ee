"""Bearer-token authentication for staff users' API tokens (named in ``REST_FRAMEWORK`` by dotted path).

It comes first among the authentication classes and answers only for staff tokens (their prefix says
so); any other bearer token is left to the next class, the agents' one. A staff token authenticates as
its user, with a ``StaffCredential`` as ``request.auth``: staff views require one, agent views refuse it.
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from decision_service.principals import StaffCredential
from decision_service.tokens import STAFF_TOKEN_PREFIX
from rules.governance.selectors import staff_user_by_token


class StaffTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, StaffCredential] | None:
        raw = request._request.META.get("HTTP_AUTHORIZATION", "")
        if isinstance(raw, str) and STAFF_TOKEN_PREFIX not in raw:
            return None  # no staff token can be in it: the agents' class reads it (every agent request)
        header = authentication.get_authorization_header(request).split()
        if len(header) != 2 or header[0].lower() != self.keyword.lower().encode():
            return None
        if not header[1].startswith(STAFF_TOKEN_PREFIX.encode()):
            return None
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("The token is not valid.") from exc
        user = staff_user_by_token(token=token)
        if user is None:
            raise exceptions.AuthenticationFailed("The token is not valid, or its user is inactive.")
        return user, StaffCredential(token_prefix=token[:12])

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

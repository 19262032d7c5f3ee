"""One exception handler: every API error leaves as ``application/problem+json`` with a ``code``."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from rules.errors import DomainError

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"

_DRF_CODES: dict[type[exceptions.APIException], tuple[str, str]] = {
    exceptions.NotAuthenticated: ("not_authenticated", "Not authenticated"),
    exceptions.AuthenticationFailed: ("not_authenticated", "Not authenticated"),
    exceptions.PermissionDenied: ("permission_denied", "Permission denied"),
    exceptions.NotFound: ("not_found", "Not found"),
    exceptions.MethodNotAllowed: ("method_not_allowed", "Method not allowed"),
    exceptions.NotAcceptable: ("not_acceptable", "Not acceptable"),
    exceptions.UnsupportedMediaType: ("unsupported_media_type", "Unsupported media type"),
    exceptions.ParseError: ("malformed_json", "Malformed JSON"),
    exceptions.ValidationError: ("invalid_request", "Invalid request"),
    exceptions.Throttled: ("throttled", "Too many requests"),
}


def problem_response(*, status_code: int, code: str, title: str, detail: str, errors: Any = None) -> Response:
    body: dict[str, Any] = {
        "type": f"https://arbiter.invalid/problems/{code}",
        "title": title,
        "status": status_code,
        "detail": detail,
        "code": code,
    }
    if errors is not None:
        body["errors"] = errors
    return Response(body, status=status_code, content_type=PROBLEM_CONTENT_TYPE)


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        return problem_response(
            status_code=exc.status, code=str(exc.code), title=exc.title, detail=exc.detail, errors=exc.errors
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        code, title = next((v for k, v in _DRF_CODES.items() if isinstance(exc, k)), ("error", "Request refused"))
        errors = exc.detail if isinstance(exc, exceptions.ValidationError) else None
        detail = "The request has invalid fields." if errors is not None else str(exc.detail)
        response = problem_response(status_code=exc.status_code, code=code, title=title, detail=detail, errors=errors)
        if isinstance(exc, exceptions.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        return response
    # Anything else is our bug: let Django turn it into a logged 500 rather than hide it as a 400.
    logger.exception("unhandled error in API view", exc_info=exc)
    return None


__all__ = ["problem_exception_handler", "problem_response", "status"]

"""One exception handler: every API error leaves as ``application/problem+json`` with a ``code``."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError as DjangoInterfaceError
from django.http import Http404
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response

from decision_service.api.parsers import PayloadTooLarge
from decision_service.errors import DatabaseUnavailable, DomainError

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
    PayloadTooLarge: ("payload_too_large", "Payload too large"),
    exceptions.Throttled: ("throttled", "Too many requests"),
}


# SQLSTATE classes that say the server cannot be used right now, not that the query is wrong: 08
# connection exception, 53 insufficient resources (too many connections, disk full), 57 operator
# intervention (shutdown, crash recovery, "the database system is starting up", statement cancelled).
_UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached, rather than a fault of the query or our code.

    Django wraps the driver's errors (``django.db.OperationalError`` and ``InterfaceError``, the driver's
    own as ``__cause__``); an error raised past Django's wrapper arrives unwrapped. An ``InterfaceError``
    is a connection that is already closed. An ``OperationalError`` counts when psycopg reports no SQLSTATE
    (a connection that could not be made or was lost) or one of the classes above; others (a deadlock, a
    serialization failure, SQLite's own errors such as a missing table) stay what they were.
    """
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if _driver_unavailable(error):
            return True
        error = error.__cause__
    return False


def _driver_unavailable(error: BaseException) -> bool:
    if isinstance(error, psycopg.InterfaceError):
        return True
    if isinstance(error, psycopg.OperationalError):
        sqlstate = getattr(error, "sqlstate", None)
        return sqlstate is None or sqlstate[:2] in _UNAVAILABLE_SQLSTATE_CLASSES
    # Django's own InterfaceError without a driver cause: it raises one for a connection it closed.
    return isinstance(error, DjangoInterfaceError) and error.__cause__ is None


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
    if not isinstance(exc, DomainError | exceptions.APIException) and database_unavailable(exc):
        # Logged without a traceback: one line per refused request is enough to see an outage.
        logger.warning("database unavailable: %s", exc)
        exc = DatabaseUnavailable()
    if isinstance(exc, DomainError):
        response = problem_response(
            status_code=exc.status, code=str(exc.code), title=exc.title, detail=exc.detail, errors=exc.errors
        )
        # Problem details may carry extension members (RFC 9457), e.g. the current state on a conflict.
        response.data.update({k: v for k, v in exc.extra.items() if k not in response.data})
        for name, value in getattr(exc, "headers", {}).items():  # e.g. Retry-After on a 429
            response[name] = value
        return response
    if isinstance(exc, DjangoValidationError):
        # A model's clean() or a service refused a value: unprocessable, with the messages per field.
        problems: dict[str, list[str]] = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        return problem_response(
            status_code=422,
            code="invalid_request",
            title="Invalid request",
            detail=" ".join(m for messages in problems.values() for m in messages),
            errors=problems,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        code, title = next((v for k, v in _DRF_CODES.items() if isinstance(exc, k)), ("error", "Request refused"))
        errors = exc.detail if isinstance(exc, exceptions.ValidationError) else None
        detail = "The request has invalid fields." if errors is not None else str(exc.detail)
        # A well-formed body with wrong fields is unprocessable (422), not malformed (400).
        status_code = 422 if isinstance(exc, exceptions.ValidationError) else exc.status_code
        response = problem_response(status_code=status_code, code=code, title=title, detail=detail, errors=errors)
        if isinstance(exc, exceptions.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        if getattr(exc, "auth_header", None):  # set by DRF on a 401; RFC 9110 requires the header
            response["WWW-Authenticate"] = exc.auth_header
        return response
    # Anything else is our bug: let Django turn it into a logged 500 rather than hide it as a 400.
    logger.exception("unhandled error in API view", exc_info=exc)
    return None


def api_not_found(request: Any, exception: Exception | None = None) -> Any:
    """Django's 404 for URLs no view matched: problem+json under /api/, the usual page elsewhere.

    With DEBUG on Django shows its technical 404 page instead of calling this: the catch-all route
    under ``/api/`` (``unknown_api_endpoint``) answers there, so no setting changes the API's 404.
    """
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return unknown_api_endpoint(request)
    return page_not_found(request, exception)


@csrf_exempt  # the API authenticates by token, and a POST here must be a 404, not a CSRF 403 page
def unknown_api_endpoint(request: Any, *args: Any, **kwargs: Any) -> Any:
    """The view of every ``/api/`` URL no endpoint matches, whatever the method and the DEBUG setting."""
    return plain_problem(404, "not_found", "Not found", "No such API endpoint.")


def api_server_error(request: Any) -> Any:
    """Django's 500 handler (outside DRF: middleware, the admin, pages): called while the exception is
    being handled, so ``sys.exc_info()`` names it. A database that cannot be reached is a 503 with
    ``Retry-After`` there too: problem+json under /api/, a short plain page elsewhere."""
    import sys

    from django.views.defaults import server_error

    exc = sys.exc_info()[1]
    if exc is not None and database_unavailable(exc):
        if request.path.startswith("/api/"):
            unavailable = DatabaseUnavailable()
            response = plain_problem(unavailable.status, unavailable.code, unavailable.title, unavailable.detail)
        else:
            from django.http import HttpResponse
            from django.utils.translation import gettext

            # The operator's language (LocaleMiddleware has run; translating needs no database).
            response = HttpResponse(
                gettext("Service unavailable: the database cannot be reached. Try again shortly.") + "\n",
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        response["Retry-After"] = DatabaseUnavailable().headers["Retry-After"]
        return response
    if request.path.startswith("/api/"):
        return plain_problem(500, "server_error", "Server error", "The server failed; the error was logged.")
    return server_error(request)


def plain_problem(status_code: int, code: str, title: str, detail: str) -> Any:
    """A problem+json response outside DRF (no renderer, no content negotiation): for Django's own
    handlers and middleware."""
    import json as _json

    from django.http import HttpResponse

    body = {
        "type": f"https://arbiter.invalid/problems/{code}",
        "title": title,
        "status": status_code,
        "detail": detail,
        "code": code,
    }
    # Written as DRF's renderer writes every other answer: compact, UTF-8.
    text = _json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(text.encode("utf-8"), status=status_code, content_type=PROBLEM_CONTENT_TYPE)


__all__ = [
    "api_not_found",
    "api_server_error",
    "database_unavailable",
    "plain_problem",
    "problem_exception_handler",
    "problem_response",
    "status",
    "unknown_api_endpoint",
]

"""One log line per request, and the JSON formatter that writes log lines for log collectors.

``RequestLogMiddleware`` (first in ``MIDDLEWARE``) gives every request an id — the client's
``X-Request-ID`` when it is a plain token (letters, digits, ``._:+/=-``, at most 128 characters), else a
new UUID — echoes it in the answer's ``X-Request-ID``, times the request for
``arbiter_http_request_duration_seconds`` and logs one line on ``arbiter.request``: request id, method,
path (never the query string), route name, status, duration, the agent's name, and the point and
decision id when the view noted them (``note``). Nothing a client wrote into a body — input text, facts,
candidates — and no header value but the request id is ever logged: those may hold personal data or
secrets.

``JsonFormatter`` writes each record as one JSON object (the production default; ``ARBITER_LOG_FORMAT``):
time, level, logger, message, pid, the request's fields on the request line, and the id of the request
being served on any other line logged while it is.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from decision_service import metrics
from decision_service.principals import AgentPrincipal

logger = logging.getLogger("arbiter.request")

HEADER = "X-Request-ID"
_VALID_ID = re.compile(r"[A-Za-z0-9._:+/=-]{1,128}")

# The fields of the request being served in this thread; None outside a request.
_current: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("arbiter_request", default=None)


def note(**fields: Any) -> None:
    """Add fields to the current request's log line (``point``, ``decision_id``); no-op outside a request."""
    current = _current.get()
    if current is not None:
        current.update(fields)


def request_id(request: HttpRequest) -> str:
    given = request.META.get("HTTP_X_REQUEST_ID", "")
    return given if _VALID_ID.fullmatch(given) else str(uuid.uuid4())


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return (match.url_name or match.view_name or "unnamed") if match is not None else "unmatched"


def _agent(request: HttpRequest) -> str | None:
    # type(), not isinstance(): request.user is a lazy object for non-API requests, and isinstance()
    # would load the session user from the database just to log.
    user = getattr(request, "user", None)
    return user.name if type(user) is AgentPrincipal else None


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        fields: dict[str, Any] = {"request_id": request_id(request), "point": None, "decision_id": None}
        token = _current.set(fields)
        metrics.IN_PROGRESS.inc()
        try:
            response = self.get_response(request)
        finally:
            metrics.IN_PROGRESS.dec()
            _current.reset(token)
        seconds = time.perf_counter() - started
        route = _route(request)
        response[HEADER] = fields["request_id"]
        metrics.request_observed(route=route, method=request.method or "", status=response.status_code, seconds=seconds)
        line = {
            "request_id": fields["request_id"],
            "method": request.method,
            "path": request.path,
            "route": route,
            "status": response.status_code,
            "duration_ms": round(seconds * 1000, 2),
            "agent": _agent(request),
            "point": fields["point"],
            "decision_id": fields["decision_id"],
        }
        # logging's extra (the formatters read record.request), not a problem's extension members.
        fields_for_formatter = {"request": line}
        logger.info(
            "%s %s %s %.1f ms",
            request.method,
            request.path,
            response.status_code,
            seconds * 1000,
            extra=fields_for_formatter,
        )
        return response


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON (UTF-8 text as it is; newlines in messages escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        fields = getattr(record, "request", None)
        if isinstance(fields, dict):
            body.update(fields)
        else:
            current = _current.get()
            if current is not None:
                body["request_id"] = current["request_id"]
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, ensure_ascii=False, default=str)


class PlainFormatter(logging.Formatter):
    """The developer's format; the request line adds its id, agent, point and decision id."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "request", None)
        if isinstance(fields, dict):
            extras = " ".join(f"{k}={fields[k]}" for k in ("request_id", "agent", "point", "decision_id") if fields[k])
            text = f"{text} {extras}"
        return text

"""The API's guard at the door: a body's framing and size are checked before anything reads it.

Django reads a request body whole (up to ``DATA_UPLOAD_MAX_MEMORY_SIZE``, 2.5 MB) before a parser
sees it, and answers a larger one with its HTML ``400``; and it reads a body by its ``Content-Length``
only, so a chunked body (``Transfer-Encoding``, no length) reaches a view as an empty one, or — under
the development server, which does not decode chunks — is left on the connection. Under ``/api/``
this middleware answers both before any of that, as problem+json: ``411 length_required`` for a body
without a length, ``413 payload_too_large`` for a declared length over ``ARBITER_MAX_REQUEST_BYTES``.
The JSON parser checks the size again as it reads, for a body that arrives some other way.

Before all of that, ``HostCheckMiddleware`` checks the ``Host`` header once, where Django would raise
``DisallowedHost`` from whichever middleware first asks (``CommonMiddleware``, for every request) and
log it with a traceback: see its docstring.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.utils import translation
from django.views.defaults import bad_request

from decision_service.api.errors import plain_problem
from decision_service.api.parsers import body_too_large_detail

API_PREFIX = "/api/"
# What orchestrators and Prometheus call by the pod's address, whatever the names the service has.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
host_logger = logging.getLogger("django.security.DisallowedHost")
# The codes these middlewares answer with (the OpenAPI test checks the spec lists them).
PROBLEM_CODES = ("length_required", "payload_too_large", "disallowed_host")


class HostCheckMiddleware:
    """A ``Host`` outside ``ALLOWED_HOSTS``: the probes are answered all the same, anything else refused
    with one warning line and no traceback.

    A kubelet or Prometheus addresses the process as ``10.1.2.3:8001``, not as ``arbiter.example.com``;
    the probes tell nothing that depends on the name (``/metrics`` keeps its own address and token
    check), so their view is called from here, past the middlewares below that would ask for the host.
    Under ``/api/`` the refusal is a ``400 disallowed_host`` problem; elsewhere (the admin) Django's
    plain ``400`` page. Placed right after the request log, so the refusal is logged like any answer.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost as exc:
            return self.disallowed(request, exc)
        return self.get_response(request)

    @staticmethod
    def disallowed(request: HttpRequest, exc: DisallowedHost) -> HttpResponse:
        path = request.path_info
        if path in PROBE_PATHS:
            match = resolve(path)
            return match.func(request, *match.args, **match.kwargs)
        host = str(request.META.get("HTTP_HOST", ""))
        host_logger.warning("Refused a request for %r: not in ALLOWED_HOSTS (%s %s)", host[:200], request.method, path)
        if path.startswith(API_PREFIX):
            return plain_problem(
                400, "disallowed_host", "Disallowed host", "The Host header names a host this service does not serve."
            )
        return bad_request(request, exc)


class ApiBodyGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(API_PREFIX):
            refusal = self.refusal(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)

    @staticmethod
    def refusal(request: HttpRequest) -> HttpResponse | None:
        meta = request.META
        if meta.get("HTTP_TRANSFER_ENCODING", "").strip():
            # RFC 9112 §6.1: a Transfer-Encoding overrides any Content-Length, and we cannot read it;
            # refusing it also closes the door on a body framed two ways at once.
            return plain_problem(
                411,
                "length_required",
                "Length required",
                "Send the body with a Content-Length header; chunked transfer coding is not accepted.",
            )
        declared = str(meta.get("CONTENT_LENGTH") or "").strip()
        if declared.isdigit() and int(declared) > settings.ARBITER_MAX_REQUEST_BYTES:
            # Over the smallest limit: the view's own parser says how much it reads (staff operations
            # carry whole configuration documents). Resolved only here, off the common path.
            limit = view_body_limit(request.path_info)
            if int(declared) > limit:
                return plain_problem(413, "payload_too_large", "Payload too large", body_too_large_detail(limit))
        return None


def view_body_limit(path: str) -> int:
    """The body limit of the view ``path`` routes to (the agent API's when it routes to none)."""
    try:
        match = resolve(path)
    except Resolver404:
        return int(settings.ARBITER_MAX_REQUEST_BYTES)
    view = getattr(match.func, "view_class", None)
    parsers = getattr(view, "parser_classes", None) or []
    setting = (
        getattr(parsers[0], "limit_setting", "ARBITER_MAX_REQUEST_BYTES") if parsers else "ARBITER_MAX_REQUEST_BYTES"
    )
    return int(getattr(settings, setting))


class ApiEnglishMiddleware:
    """Answers under ``/api/`` stay in English whatever the client's ``Accept-Language`` or language cookie.

    The admin follows the operator's language (``LocaleMiddleware``, which runs before this); API clients
    match on the stable ``code`` and log ``detail``, and one language there keeps the contract and the
    recorded corpus the same for every caller (docs/api.md, "Language").
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(API_PREFIX):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = settings.LANGUAGE_CODE
        return self.get_response(request)

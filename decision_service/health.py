"""Readiness: ``GET /readyz`` answers 200 when this process can serve decisions, else 503 with the reasons.

``/healthz`` (in ``urls.py``) says only that the process is alive. ``/readyz`` checks what serving needs:
the database answers a query, the Celery broker accepts a connection when one is configured
(``CELERY_BROKER_URL``; without one, tasks run in-process and there is nothing to reach), and whatever
the apps register through ``readiness_checking`` — ``rules`` checks that the current configuration
revision compiles. A failed check is reported, not raised: the probe's job is to say what is wrong.
Neither endpoint needs a token; neither tells more than a check's name and a short reason.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.dispatch import Signal
from django.http import HttpRequest, HttpResponse

from decision_service.api.errors import PROBLEM_CONTENT_TYPE
from decision_service.env import IN_PROCESS_BROKER_URL

logger = logging.getLogger(__name__)

# Readiness is being checked (no kwargs). Receivers answer {check name: (ready, what they found)}.
readiness_checking = Signal()

BROKER_TIMEOUT_SECONDS = 2.0
NOT_CONFIGURED = IN_PROCESS_BROKER_URL  # CELERY_BROKER_URL's setting when the environment names no broker


def database_check() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        logger.warning("readyz: the database is unreachable: %s", exc)
        return False, "the database cannot be reached"
    return True, "reachable"


def broker_check() -> tuple[bool, str]:
    url = settings.CELERY_BROKER_URL
    if not url or url == NOT_CONFIGURED:
        return True, "none configured (tasks run in-process)"
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.warning("readyz: the broker is unreachable: %s", exc)
        return False, "the Celery broker cannot be reached"
    return True, "reachable"


def readiness() -> dict[str, tuple[bool, str]]:
    """Every check by name: (ready, what it found)."""
    checks = {"database": database_check(), "broker": broker_check()}
    for _receiver, answer in readiness_checking.send(sender=None):
        if isinstance(answer, dict):
            checks.update(answer)
    return checks


def _json(body: dict[str, Any], status: int, content_type: str) -> HttpResponse:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(text.encode("utf-8"), status=status, content_type=content_type)


def readyz(request: HttpRequest) -> HttpResponse:
    """200 ``{"status": "ready", "checks": {...}}``, or a 503 problem with each failed check in ``errors``."""
    if request.method not in ("GET", "HEAD"):
        body = {
            "type": "https://arbiter.invalid/problems/method_not_allowed",
            "title": "Method not allowed",
            "status": 405,
            "detail": f'Method "{request.method}" not allowed.',
            "code": "method_not_allowed",
        }
        response = _json(body, 405, PROBLEM_CONTENT_TYPE)
        response["Allow"] = "GET, HEAD"
        return response
    checks = readiness()
    failed = {name: found for name, (ready, found) in checks.items() if not ready}
    if not failed:
        return _json(
            {"status": "ready", "checks": {name: found for name, (_, found) in checks.items()}}, 200, "application/json"
        )
    body = {
        "type": "https://arbiter.invalid/problems/not_ready",
        "title": "Not ready",
        "status": 503,
        "detail": "Not ready: " + "; ".join(f"{name}: {found}" for name, found in failed.items()) + ".",
        "code": "not_ready",
        "errors": {name: [found] for name, found in failed.items()},
    }
    response = _json(body, 503, PROBLEM_CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response

"""What bench.http.profile and bench.http.cost share: the benchmark's database prepared for ``requests``
requests a path, and a sender of one path's requests through Django's test client (no HTTP server).

**It empties the database named by DATABASE_URL**, as run.py does.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from typing import Any


def prepare(requests: int) -> Any:
    """Settings, database and agent for ``requests`` requests a path; a test client with the agent's token."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database this may empty.")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "bench.http.settings",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,testserver",
            "SECURE_SSL_REDIRECT": "false",
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    from bench.http import run

    # Fewer sessions to make; not fewer decide sessions: the session paths' numbers wrap at the count
    # their ``Path_`` was built with (``mod``), and every one of those sessions must exist.
    run.TRANSITION_SESSIONS = 10
    token = run.prepare(requests)
    run.settle()
    from django.test import Client

    return Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")


def sender(client: Any, p: Any) -> Callable[[int], None]:
    """Send request ``number`` of path ``p`` (a ``run.Path_``), and check it got the path's status."""

    def send(number: int) -> None:
        number = number % p.mod if p.mod else number  # a session path reuses its sessions, as run.py does
        body = p.body.replace("%d", str(number))
        answer = client.post(p.path.replace("%d", str(number)), body, content_type="application/json")
        assert answer.status_code == p.expect, (p.name, answer.status_code, answer.content[:300])

    return send

"""The agents admin, found by Django's admin autodiscovery here: each room's admin module, imported to register.

Presentation only; every write goes through the services.
"""

from agents.queue import admin as queue
from agents.runtimes import admin as runtimes
from agents.sessions.admin import anomalies, sessions
from agents.tools import (
    admin_approvals,  # takes the queue admin's place for Session (it imports that first)
    admin_breakers,
    admin_calls,
)
from agents.traces import admin as traces
from agents.webhooks import admin as webhooks

__all__ = [
    "admin_approvals",
    "admin_breakers",
    "admin_calls",
    "anomalies",
    "queue",
    "runtimes",
    "sessions",
    "traces",
    "webhooks",
]

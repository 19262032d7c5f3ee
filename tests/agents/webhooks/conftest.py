from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from django.db import connection

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from tests.support.tools import DEMO_WITH_TOOLS
from tests.support.worker import Worker, celery_worker

# Tiny backoff and few attempts, so a test sees retries and give-ups at once: in this process (which
# records the events) and, through the environment, in the worker process (which delivers them).
QUICK = {
    "ARBITER_WEBHOOK_BACKOFF_SECONDS": "0.01",
    "ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS": "0.05",
    "ARBITER_WEBHOOK_MAX_ATTEMPTS": "3",
    "ARBITER_WEBHOOK_DISABLE_AFTER": "2",
    "ARBITER_WEBHOOK_TIMEOUT_SECONDS": "5",
}


@pytest.fixture
def bot(db):
    config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="webhook tests")
    agent, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="webhook tests")
    return agent


@pytest.fixture
def quick(settings):
    settings.ARBITER_WEBHOOK_BACKOFF_SECONDS = float(QUICK["ARBITER_WEBHOOK_BACKOFF_SECONDS"])
    settings.ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS = float(QUICK["ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS"])
    settings.ARBITER_WEBHOOK_MAX_ATTEMPTS = int(QUICK["ARBITER_WEBHOOK_MAX_ATTEMPTS"])
    settings.ARBITER_WEBHOOK_DISABLE_AFTER = int(QUICK["ARBITER_WEBHOOK_DISABLE_AFTER"])
    settings.ARBITER_WEBHOOK_TIMEOUT_SECONDS = float(QUICK["ARBITER_WEBHOOK_TIMEOUT_SECONDS"])
    return settings


@pytest.fixture
def delivering(quick, transactional_db) -> Iterator[Worker | None]:
    """Who sends the deliveries: Celery's eager path in this process (no broker: the SQLite run), or a
    real worker process taking them from Redis on a queue of its own (the PostgreSQL+Redis run)."""
    if django_settings.CELERY_TASK_ALWAYS_EAGER:
        yield None
        return
    if connection.vendor != "postgresql":
        pytest.fail("a real worker needs a database another process can open: run it with DATABASE_URL=postgres://…")
    with celery_worker(**QUICK) as worker:
        quick.ARBITER_WEBHOOK_QUEUE = worker.queue
        yield worker

"""Which store this process's breakers use: Redis when one is configured, the database otherwise
(``agents.tools.breaker_store`` says how each works and why)."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from agents.tools.breaker_redis import RedisStore
from agents.tools.breaker_store import DatabaseStore, Store


def redis_url() -> str:
    """The Redis the breakers live in, or "" for the database (as ``ratelimit.buckets`` decides)."""
    url = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    if url.startswith(("redis://", "rediss://", "unix://")) and not getattr(
        settings, "CELERY_TASK_ALWAYS_EAGER", False
    ):
        return url
    return ""


@cache
def store() -> Store:
    """The process's store: Redis (falling back to the database while it is away) or the database."""
    url = redis_url()
    if url:
        return RedisStore(url, fallback=DatabaseStore())
    return DatabaseStore()

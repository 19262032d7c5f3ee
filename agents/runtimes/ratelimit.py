"""Per-agent rate limit: a token bucket per agent runtime, in Redis when a broker is configured.

Each agent with a rate has a bucket holding up to ``burst`` tokens, refilled at ``rate_per_minute / 60``
tokens a second; each API request takes one, and a request that finds less than one is refused with
``429 rate_limited`` and ``Retry-After`` (the seconds until a token is there, rounded up).

- With a broker (``CELERY_BROKER_URL=redis://…``) the buckets live in that Redis, so every process and
  machine serving the API shares one bucket per agent. Refill and take are one Lua script, atomic in
  Redis, timed by Redis's own clock (``TIME``), so clocks of the API processes do not matter.
- Without one (a development checkout, tests on SQLite), each process keeps its buckets in memory under
  a lock: the limit then holds per process.
- When that Redis cannot be reached, the limit falls back to the in-process buckets rather than failing
  the request or dropping the limit (docs/threat-model.md says why): decisions are still served, and each
  process holds an agent to the rate on its own. The process asks Redis again ``REDIS_RETRY_SECONDS``
  after a failure, so an outage costs one failed round trip per process that often, not one per request.

Only a request an agent token authenticated is counted; staff requests are not limited. The rate is read
with the agent on authentication, so the limit adds no database query (Redis: one round trip).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from agents.errors import RateLimited
from decision_service import metrics
from decision_service.principals import AgentPrincipal

KEY_PREFIX = "arbiter:rate:agent:"

logger = logging.getLogger(__name__)


class Buckets(Protocol):
    def take(self, key: str, *, rate_per_minute: int, burst: int) -> float:
        """Take a token from ``key``'s bucket: 0 when there was one, else the seconds until there is."""


class LocalBuckets:
    """In-process buckets (no broker configured): one per agent, per process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._state: dict[str, tuple[float, float]] = {}  # key → (tokens, when)

    def take(self, key: str, *, rate_per_minute: int, burst: int) -> float:
        rate = rate_per_minute / 60.0
        with self._lock:
            now = self._clock()
            tokens, when = self._state.get(key, (float(burst), now))
            tokens = min(float(burst), tokens + max(0.0, now - when) * rate)
            if tokens >= 1.0:
                self._state[key] = (tokens - 1.0, now)
                return 0.0
            self._state[key] = (tokens, now)
            return (1.0 - tokens) / rate


# KEYS[1]: the bucket; ARGV: tokens a second, burst. Returns the wait in seconds as text (Lua numbers
# returned to Redis are cut to integers). The key expires once a full bucket would have refilled.
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
return string.format('%.17g', wait)
"""


REDIS_RETRY_SECONDS = 5.0


class RedisBuckets:
    """Buckets shared by every API process, in the broker's Redis; in-process ones while it is away."""

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._script: Any = self._client.register_script(_TAKE)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._clock = clock
        self._fallback = LocalBuckets(clock)
        self._down_until = float("-inf")

    def take(self, key: str, *, rate_per_minute: int, burst: int) -> float:
        if self._clock() >= self._down_until:
            try:
                wait = float(self._script(keys=[key], args=[rate_per_minute / 60.0, burst]))
            except self._errors as exc:
                if self._down_until == float("-inf"):
                    logger.warning("rate limit: Redis unreachable, limiting per process for now: %s", exc)
                self._down_until = self._clock() + REDIS_RETRY_SECONDS
            else:
                if self._down_until != float("-inf"):
                    logger.warning("rate limit: Redis reachable again, limits are shared again")
                self._down_until = float("-inf")
                return wait
        return self._fallback.take(key, rate_per_minute=rate_per_minute, burst=burst)


@cache
def buckets() -> Buckets:
    """The process's buckets: Redis when the broker is Redis, in memory otherwise."""
    url = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    if url.startswith(("redis://", "rediss://", "unix://")) and not getattr(
        settings, "CELERY_TASK_ALWAYS_EAGER", False
    ):
        return RedisBuckets(url)
    return LocalBuckets()


def agent_rate_check(principal: AgentPrincipal) -> None:
    """Take one request from the agent's bucket; ``RateLimited`` when it is empty. No rate: no limit."""
    rate = principal.rate_per_minute
    if not rate:
        return
    burst = principal.rate_burst or rate
    wait = buckets().take(f"{KEY_PREFIX}{principal.pk}", rate_per_minute=rate, burst=burst)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        metrics.request_rate_limited(agent=principal.name)
        raise RateLimited(
            f"Agent {principal.name} may send {rate} requests a minute (burst {burst}); retry in {seconds} s.",
            retry_after=seconds,
        )


class AgentRateThrottle(BaseThrottle):
    """DRF's throttle hook (``DEFAULT_THROTTLE_CLASSES``): runs after authentication, on every API view."""

    def allow_request(self, request: Request, view: Any) -> bool:
        user = getattr(request, "user", None)
        if isinstance(user, AgentPrincipal):
            agent_rate_check(user)
        return True

"""The breakers in Redis: each operation one Lua script, atomic, timed by Redis's clock (``TIME``).

The scripts are ``agents.tools.breaker_machine`` written in Lua (the tests run both against the same
steps). Per tool, three keys under one hash tag (one slot, should the Redis be a cluster):
``arbiter:breaker:{tool}`` a hash (state, opened_at, trials_left, trials_ok, forced),
``…:failures`` a sorted set of failure times (closed), ``…:leases`` a sorted set of leases scored by
their deadline. Nothing expires: a breaker opened by hand stays open until a person closes it.

While Redis cannot be reached, the database store answers (shared by every process, unlike a per-process
fallback); the process tries Redis again ``REDIS_RETRY_SECONDS`` later and logs the change once each way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from agents.tools.breaker_machine import FORCED_RETRY_MS, Breaker, Outcome
from agents.tools.breaker_store import DatabaseStore, Snapshot

logger = logging.getLogger(__name__)

KEY_PREFIX = "arbiter:breaker:"
REDIS_RETRY_SECONDS = 5.0

# ARGV[1]: the time in ms ("" = Redis's TIME; tests pass their own); ARGV[2..6]: has breaker (1/0),
# failure threshold, window ms, half-open after ms, trial calls.
_COMMON = """
local H, F, L = KEYS[1], KEYS[2], KEYS[3]
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME'); now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end
local has_b = ARGV[2] == '1'
local threshold, window, half_open, trials = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local v = redis.call('HMGET', H, 'state', 'opened_at', 'trials_left', 'trials_ok', 'forced')
local s = {state = v[1] or 'closed', opened_at = tonumber(v[2]) or 0, trials_left = tonumber(v[3]) or 0,
  trials_ok = tonumber(v[4]) or 0, forced = v[5] == '1'}
local before = s.state
local function save()
  redis.call('HSET', H, 'state', s.state, 'opened_at', string.format('%d', s.opened_at),
    'trials_left', s.trials_left, 'trials_ok', s.trials_ok, 'forced', s.forced and '1' or '0')
end
local function open_it()
  s.state = 'open'; s.opened_at = now; s.trials_left = 0; s.trials_ok = 0; redis.call('DEL', F)
end
local function close_it()
  s.state = 'closed'; s.opened_at = 0; s.trials_left = 0; s.trials_ok = 0; s.forced = false; redis.call('DEL', F)
end
local function advance()
  if has_b and s.state == 'open' and not s.forced and now >= s.opened_at + half_open then
    s.state = 'half_open'; s.opened_at = 0; s.trials_left = trials; s.trials_ok = 0
  end
end
"""

# ARGV[7]: max concurrent (0 = no limit); ARGV[8]: lease; ARGV[9]: its deadline (ms).
# Returns {refusal or '', before, after, retry after ms}.
_ENTER = (
    _COMMON
    + """
local limit, lease, deadline = tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])
if s.forced then
  local hint = ARGV[10]
  if has_b and half_open > 0 then hint = half_open end
  return {'circuit_open', before, s.state, hint}
end
local trial = false
if has_b then
  advance()
  if s.state == 'open' then
    return {'circuit_open', before, s.state, math.max(1, s.opened_at + half_open - now)}
  end
  if s.state == 'half_open' then
    if s.trials_left <= 0 then
      if s.opened_at > 0 and now > s.opened_at then
        open_it(); save()
        return {'circuit_open', before, s.state, math.max(1, half_open)}
      end
      local wait = half_open
      if s.opened_at > 0 then wait = s.opened_at - now end
      if before ~= s.state then save() end
      return {'circuit_open', before, s.state, math.max(1, wait)}
    end
    trial = true
  end
end
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', L, '-inf', now)
  if not redis.call('ZSCORE', L, lease) and redis.call('ZCARD', L) >= limit then
    local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
    if before ~= s.state then save() end
    return {'tool_concurrency', before, s.state, math.max(1, tonumber(first[2]) - now)}
  end
  redis.call('ZADD', L, deadline, lease)
end
if trial then
  s.trials_left = s.trials_left - 1
  s.opened_at = math.max(s.opened_at, deadline)
end
if trial or before ~= s.state then save() end
return {'', before, s.state, 0}
"""
)

# ARGV[7]: 1 ok, 0 failed, i an ignored trial (its slot given back; breaker_machine.record).
_RECORD = (
    _COMMON
    + """
local ok = ARGV[7] == '1'
if not has_b or s.forced then return {'', before, s.state, 0} end
advance()
if ARGV[7] == 'i' then
  if s.state == 'half_open' then
    s.trials_left = math.min(trials - s.trials_ok, s.trials_left + 1)
    save()
  elseif before ~= s.state then
    save()
  end
elseif s.state == 'closed' and not ok then
  redis.call('ZREMRANGEBYSCORE', F, '-inf', now - window)
  local seq = redis.call('HINCRBY', H, 'seq', 1)
  redis.call('ZADD', F, now, string.format('%d', now) .. ':' .. seq)
  if redis.call('ZCARD', F) >= threshold then open_it() end
  save()
elseif s.state == 'half_open' then
  if not ok then open_it() else
    s.trials_ok = s.trials_ok + 1
    if s.trials_ok >= trials then close_it() end
  end
  save()
elseif before ~= s.state then
  save()
end
return {'', before, s.state, 0}
"""
)

# ARGV[7]: 1 open, 0 close.
_FORCE = (
    _COMMON
    + """
if ARGV[7] == '1' then open_it(); s.forced = true else close_it() end
save()
return {'', before, s.state, 0}
"""
)

# Returns {state, forced, failures in window, leases alive, opened_at}; changes nothing.
_SNAPSHOT = (
    _COMMON
    + """
advance()
local failures = 0
if has_b and s.state == 'closed' then failures = redis.call('ZCOUNT', F, '(' .. (now - window), '+inf') end
local alive = redis.call('ZCOUNT', L, '(' .. now, '+inf')
return {s.state, s.forced and 1 or 0, failures, alive, string.format('%d', s.opened_at), string.format('%d', now)}
"""
)

_LEAVE = """
redis.call('ZREM', KEYS[1], ARGV[1])
return 0
"""


def keys(tool: str) -> list[str]:
    base = f"{KEY_PREFIX}{{{tool}}}"
    return [base, f"{base}:failures", f"{base}:leases"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisStore:
    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        fallback: DatabaseStore,
        clock: Callable[[], int] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._scripts: dict[str, Any] = {
            name: self._client.register_script(body)
            for name, body in (
                ("enter", _ENTER),
                ("record", _RECORD),
                ("force", _FORCE),
                ("snapshot", _SNAPSHOT),
                ("leave", _LEAVE),
            )
        }
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._clock = clock  # None: Redis's TIME
        self._monotonic = monotonic
        self._down_until = float("-inf")
        self.fallback = fallback

    @property
    def using_fallback(self) -> bool:
        return self._monotonic() < self._down_until

    def _run(self, script: str, tool: str, args: list[Any]) -> Any:
        """The script's answer, or None when Redis could not be reached (the caller asks the database)."""
        if self.using_fallback:
            return None
        name = keys(tool)
        try:
            answer = self._scripts[script](keys=name if script != "leave" else name[2:], args=args)
        except self._errors as exc:
            if self._down_until == float("-inf"):
                logger.warning("tool breakers: Redis unreachable, using the database store for now: %s", exc)
            self._down_until = self._monotonic() + REDIS_RETRY_SECONDS
            return None
        if self._down_until != float("-inf"):
            logger.warning("tool breakers: Redis reachable again, breakers live in Redis again")
            self._down_until = float("-inf")
        return answer

    def _head(self, breaker: Breaker | None) -> list[Any]:
        now = "" if self._clock is None else str(self._clock())
        if breaker is None:
            return [now, "0", 0, 0, 0, 0]
        return [now, "1", breaker.threshold, breaker.window_ms, breaker.half_open_ms, breaker.trials]

    @staticmethod
    def _outcome(answer: Any) -> Outcome:
        refused, before, after, retry = answer
        return Outcome(_text(before), _text(after), _text(refused), int(retry))

    def enter(
        self, tool: str, *, breaker: Breaker | None, max_concurrent: int | None, lease: str, deadline_ms: int
    ) -> Outcome:
        args = [*self._head(breaker), max_concurrent or 0, lease, deadline_ms, FORCED_RETRY_MS]
        answer = self._run("enter", tool, args)
        if answer is None:
            return self.fallback.enter(
                tool, breaker=breaker, max_concurrent=max_concurrent, lease=lease, deadline_ms=deadline_ms
            )
        return self._outcome(answer)

    def leave(self, tool: str, *, lease: str) -> None:
        if self._run("leave", tool, [lease]) is None:
            self.fallback.leave(tool, lease=lease)

    def record(self, tool: str, *, breaker: Breaker | None, ok: bool | None) -> Outcome:
        answer = self._run("record", tool, [*self._head(breaker), "i" if ok is None else "1" if ok else "0"])
        if answer is None:
            return self.fallback.record(tool, breaker=breaker, ok=ok)
        return self._outcome(answer)

    def force(self, tool: str, *, opened: bool) -> Outcome:
        answer = self._run("force", tool, [*self._head(None), "1" if opened else "0"])
        if answer is None:
            return self.fallback.force(tool, opened=opened)
        return self._outcome(answer)

    def snapshot(self, tool: str, *, breaker: Breaker | None) -> Snapshot:
        answer = self._run("snapshot", tool, self._head(breaker))
        if answer is None:
            return self.fallback.snapshot(tool, breaker=breaker)
        state, forced, failures, alive, opened_at, now = answer
        state, opened = _text(state), int(_text(opened_at))
        is_open = state == "open"
        retry = None
        if is_open and breaker is not None and not forced:
            retry = max(1, opened + breaker.half_open_ms - int(_text(now)))
        return Snapshot(
            tool=tool,
            state=state,
            forced=bool(forced),
            failures=int(failures),
            in_flight=int(alive),
            opened_at_ms=opened if is_open else None,
            retry_after_ms=retry,
        )

    def clear(self, tool: str) -> None:
        """Forget a tool's state (tests)."""
        self._client.delete(*keys(tool))

    def clear_all(self) -> None:
        """Forget every tool's state (tests: a shared Redis outlives each test's database)."""
        found = list(self._client.scan_iter(match=f"{KEY_PREFIX}*", count=500))
        if found:
            self._client.delete(*found)

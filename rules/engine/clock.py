"""The local time of day of a request, in a named time zone (zones are loaded once and cached)."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from functools import lru_cache


@lru_cache(maxsize=256)
def zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def time_of_day(now: dt.datetime, tz: str) -> int:
    """Seconds after local midnight in ``tz``."""
    local = now.astimezone(zone(tz))
    return local.hour * 3600 + local.minute * 60 + local.second

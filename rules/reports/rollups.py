"""Daily rollups of the decision log for the decision-point map (docs/report.md, "Rollups").

A rollup holds, per decision point, what ``rules.reports.counting.count_range`` counts over one whole
local day (``TIME_ZONE``), plus the day's "ask your LLM" counters. Only closed days are rolled up: a
day whose end is still to come would be out of date at its next decision.

Invariants:
- Recomputing a day replaces its rows in one transaction, under a lock on the day's marker row, so two
  workers recomputing the same day one after the other leave one set of rows, and a reader sees either
  the old rows or the new ones.
- A day has rollups only once its marker (``DecisionRollupDay``) exists for the current ``TIME_ZONE``;
  the report counts a day without a marker directly, so a missing rollup is never read as zero.
- Rows logged for a closed day after its rollup was built (a transaction that committed after
  midnight) are counted once the day is recomputed: the scheduled refresh recomputes the last
  ``RECENT_DAYS`` closed days on every run.
- The retention sweep deletes the markers of the days it purges from, so the report never adds counts
  of rows that are gone.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone

from rules.models import DecisionRollup, DecisionRollupDay
from rules.reports.counting import DayCounts, count_range, day_bounds, needs_by_date, report_time_zone
from rules.reports.decision_map import DAYS_MAX

logger = logging.getLogger(__name__)

# Closed days the scheduled refresh recomputes every time, for rows that arrive late.
RECENT_DAYS = 2
# How far back the scheduled refresh fills in days that have no rollup: the report's longest window,
# whose first day is partial, so the whole days inside it are at most DAYS_MAX.
HORIZON_DAYS = DAYS_MAX


class OpenDay(ValueError):
    """The day has not ended yet (in ``TIME_ZONE``): it cannot be rolled up."""


def last_closed_day(now: dt.datetime | None = None) -> dt.date:
    _, tz = report_time_zone()
    return (now or timezone.now()).astimezone(tz).date() - dt.timedelta(days=1)


@transaction.atomic
def decision_rollup_day(*, day: dt.date, now: dt.datetime | None = None) -> int:
    """Count ``day`` (a closed day in ``TIME_ZONE``) and store its rollups, replacing any it had.
    Returns how many points it holds rows for. Idempotent."""
    now = now or timezone.now()
    name, tz = report_time_zone()
    start, end = day_bounds(day, tz)
    if end > now:
        raise OpenDay(f"{day.isoformat()} has not ended yet in {name}; only closed days are rolled up.")
    # update_or_create locks the marker row (SELECT … FOR UPDATE on PostgreSQL; SQLite takes the write
    # lock at BEGIN): a second recomputation of the day waits here, then counts what is committed.
    marker, _ = DecisionRollupDay.objects.update_or_create(
        day=day, time_zone=name, defaults={"start": start, "end": end, "computed_at": now}
    )
    counts = count_range(start, end)
    for point, per_day in needs_by_date([day]).items():
        counts.setdefault(point, DayCounts()).needs_candidate = per_day[day]
    DecisionRollup.objects.filter(rollup_day=marker).delete()
    DecisionRollup.objects.bulk_create(
        [DecisionRollup(rollup_day=marker, point=point, **c.as_row()) for point, c in sorted(counts.items())]
    )
    return len(counts)


def decision_rollups_rebuild(*, first: dt.date, last: dt.date, now: dt.datetime | None = None) -> list[dt.date]:
    """Recompute every closed day from ``first`` to ``last`` (inclusive; later days are skipped), each in
    its own transaction. Returns the days recomputed."""
    now = now or timezone.now()
    last = min(last, last_closed_day(now))
    done = []
    day = first
    while day <= last:
        decision_rollup_day(day=day, now=now)
        done.append(day)
        day += dt.timedelta(days=1)
    logger.info("decision rollups: recomputed %d days from %s to %s", len(done), first, last)
    return done


def decision_rollups_refresh(
    *, now: dt.datetime | None = None, recent: int = RECENT_DAYS, horizon: int = HORIZON_DAYS
) -> list[dt.date]:
    """The scheduled job: recompute the last ``recent`` closed days, and roll up every closed day of the
    last ``horizon`` that has no rollup yet. Returns the days recomputed. Safe to run at any time, and
    twice."""
    now = now or timezone.now()
    name, _ = report_time_zone()
    last = last_closed_day(now)
    first = last - dt.timedelta(days=horizon - 1)
    have = set(
        DecisionRollupDay.objects.filter(time_zone=name, day__gte=first, day__lte=last).values_list("day", flat=True)
    )
    due = [
        first + dt.timedelta(days=i)
        for i in range(horizon)
        if (first + dt.timedelta(days=i)) not in have or (last - (first + dt.timedelta(days=i))).days < recent
    ]
    for day in due:
        decision_rollup_day(day=day, now=now)
    return due


def decision_rollups_forget_before(cutoff: dt.datetime) -> int:
    """Delete the rollups of every day that begins before ``cutoff`` (the retention sweep's): their rows
    are being purged, in whole or in part. A day cut in two is rolled up again, from what is left, by the
    next refresh. Returns how many days were forgotten."""
    days = DecisionRollupDay.objects.filter(start__lt=cutoff)
    forgotten = days.count()
    days.delete()
    return forgotten


def decision_rollups_forget_between(start: dt.datetime, end: dt.datetime) -> int:
    """Delete the rollups of every day that overlaps ``[start, end]``: rows were written into them after
    they were counted (a bulk load). The report counts those days directly until they are rolled up
    again. Returns how many days were forgotten."""
    days = DecisionRollupDay.objects.filter(start__lte=end, end__gt=start)
    forgotten = days.count()
    days.delete()
    return forgotten

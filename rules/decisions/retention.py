"""Retention of the decision log: rows older than the retention period are purged by a daily sweep.

Decision log rows, anomalies and "ask your LLM" counters are records of what happened, not audited
configuration, so they are deleted with plain queryset deletes (no history is written). They are
deleted in primary-key batches, each batch in its own short transaction, so that purging a huge log
never holds one long transaction or locks the whole table.

On PostgreSQL the log is partitioned by month (``rules.decisions.partitions``) and is not deleted row by
row: a month is dropped whole once every day of it is older than the period, so a decision is kept for
at least the period and at most one month longer. Anomalies and counters are still deleted in batches.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from rules.decisions.partitions import (
    decision_log_partitioned,
    decision_log_partitions_drop,
    decision_log_partitions_ensure,
)
from rules.hooks import decision_log_purging
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord
from rules.reports.rollups import decision_rollups_forget_before

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 5000


def queryset_delete_in_batches(queryset: models.QuerySet, *, order_by: str, batch_size: int) -> int:
    """Delete every row of ``queryset``, oldest first, ``batch_size`` primary keys at a time."""
    model = queryset.model
    total = 0
    while True:
        pks = list(queryset.order_by(order_by).values_list("pk", flat=True)[:batch_size])
        if not pks:
            return total
        with transaction.atomic():
            # Only the key is loaded: the related-row handling (anomalies' SET_NULL) needs nothing more.
            deleted, _ = model._default_manager.filter(pk__in=pks).only("pk").delete()
        # ``deleted`` also counts rows removed by cascades; the batch is what this model lost.
        total += len(pks)
        logger.debug("decision log purge: deleted a batch of %d %s (%d rows in all)", len(pks), model.__name__, deleted)


def decision_log_rows_purge(*, cutoff: dt.datetime, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
    """Delete the decisions logged before ``cutoff`` row by row, in batches (the log is not partitioned).

    Anomalies and transitions pointing at them lose the link (``SET_NULL``); their idempotency keys go.
    """
    return queryset_delete_in_batches(
        DecisionRecord.objects.filter(created_at__lt=cutoff), order_by="created_at", batch_size=batch_size
    )


def decision_log_purge(
    *, older_than_days: int | None = None, now: dt.datetime | None = None, batch_size: int = DEFAULT_BATCH_SIZE
) -> int:
    """Delete decisions (and anomalies, and candidate-request counters) older than the retention period.

    ``older_than_days`` defaults to ``settings.ARBITER_DECISION_RETENTION_DAYS``; 0 (or less) keeps the
    log forever and deletes nothing. Returns how many decisions were deleted. On a partitioned log
    (PostgreSQL) whole months are dropped: those that ended at or before the cutoff. Running it again deletes
    nothing more, so the sweep is safe to repeat or to run from two workers at once.
    """
    days = settings.ARBITER_DECISION_RETENTION_DAYS if older_than_days is None else older_than_days
    if days <= 0:
        logger.info("decision log purge: retention is 0 days (keep forever); nothing deleted")
        return 0
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    now = now or timezone.now()
    cutoff = now - dt.timedelta(days=days)
    # The apps built on the log first (anomalies): theirs are old too, and rows pointing at the decisions
    # about to go would each need their link set to NULL when the decisions are deleted.
    anomalies = sum(count or 0 for count in decision_log_purging.ask(cutoff=cutoff, batch_size=batch_size))
    if decision_log_partitioned():
        # Rows that landed in DEFAULT go to their month first, so that they leave with it.
        decision_log_partitions_ensure(now=now)
        decisions = decision_log_partitions_drop(cutoff=cutoff, batch_size=batch_size)
    else:
        decisions = decision_log_rows_purge(cutoff=cutoff, batch_size=batch_size)
    # After the rows went, before a report reads again: a rollup of a purged day would count rows that are
    # gone (on PostgreSQL the days of a month not yet dropped are then counted directly, as they still are).
    decision_rollups_forget_before(cutoff)
    counters = queryset_delete_in_batches(
        CandidateRequestCount.objects.filter(day__lt=cutoff.date()), order_by="day", batch_size=batch_size
    )
    # A session write's key names no decision, so neither deleting rows nor dropping months takes it: it
    # goes on its own once as old as the log kept (a retry that late is a new request anyway).
    session_keys = queryset_delete_in_batches(
        DecisionIdempotencyKey.objects.filter(decision_id__isnull=True, created_at__lt=cutoff),
        order_by="created_at",
        batch_size=batch_size,
    )
    logger.info(
        "decision log purge: deleted %d decisions, %d anomalies, %d candidate-request counters and %d "
        "session writes' idempotency keys older than %d days (before %s)",
        decisions,
        anomalies,
        counters,
        session_keys,
        days,
        cutoff.isoformat(),
    )
    return decisions

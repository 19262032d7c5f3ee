"""Retention: decisions, anomalies and candidate-request counters older than the period are purged.

These run on SQLite (rows deleted in batches) and on PostgreSQL (whole months of the partitioned log
dropped; tests/rules/decisions/test_partitions.py tests what only that does). ``NOW`` is the first instant of a
month and the periods are whole months back from it, so "older than the cutoff" and "in a month that
ended by the cutoff" are the same rows and one set of expectations holds for both.
"""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.utils import timezone

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create
from agents.sessions.models import Anomaly
from rules.decisions.retention import decision_log_purge, decision_log_rows_purge
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord
from rules.tasks import decision_log_purge as decision_log_purge_task

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2025, 7, 1, 0, 0, tzinfo=dt.UTC)  # 30 days back: 2025-06-01 00:00


@pytest.fixture
def agent() -> AgentRuntime:
    runtime, _ = agent_create(name="support_bot", point_keys=[], actor=None, reason="t")
    return runtime


def make_decision(agent: AgentRuntime, created_at: dt.datetime, **fields) -> DecisionRecord:
    return DecisionRecord.objects.create(
        created_at=created_at,
        point="refund_approval",
        agent_id=agent.pk,
        agent_name=agent.name,
        decision="auto_approve",
        ruled_by="default",
        revision=1,
        **fields,
    )


def make_anomaly(agent: AgentRuntime, created_at: dt.datetime, decision: DecisionRecord | None = None) -> Anomaly:
    anomaly = Anomaly.objects.create(agent=agent, code="invalid_candidate_output", decision=decision)
    Anomaly.objects.filter(pk=anomaly.pk).update(created_at=created_at)  # auto_now_add: set the time afterwards
    return anomaly


def days_ago(days: float, now: dt.datetime = NOW) -> dt.datetime:
    return now - dt.timedelta(days=days)


def test_only_rows_older_than_the_period_are_deleted(agent, settings, caplog):
    settings.ARBITER_DECISION_RETENTION_DAYS = 30
    old = [make_decision(agent, days_ago(d)) for d in (31, 45, 400)]
    kept = [make_decision(agent, days_ago(d)) for d in (29.9, 1, 0)]
    old_anomaly = make_anomaly(agent, days_ago(31), decision=old[0])
    # An anomaly still inside the period keeps its row; its old decision goes, so the link is emptied.
    recent_anomaly = make_anomaly(agent, days_ago(2), decision=old[1])
    CandidateRequestCount.objects.create(point="intent_routing", agent_id=agent.pk, day=days_ago(40).date(), count=3)
    CandidateRequestCount.objects.create(point="intent_routing", agent_id=agent.pk, day=days_ago(3).date(), count=5)

    with caplog.at_level(logging.INFO, logger="rules.decisions.retention"):
        assert decision_log_purge(now=NOW) == 3
    assert "deleted 3 decisions" in caplog.text

    assert set(DecisionRecord.objects.values_list("pk", flat=True)) == {r.pk for r in kept}
    assert not Anomaly.objects.filter(pk=old_anomaly.pk).exists()
    recent_anomaly.refresh_from_db()
    assert recent_anomaly.decision_id is None
    assert list(CandidateRequestCount.objects.values_list("count", flat=True)) == [5]
    # Idempotent: a second sweep finds nothing more.
    assert decision_log_purge(now=NOW) == 0
    assert DecisionRecord.objects.count() == 3


def test_older_than_days_overrides_the_setting(agent, settings):
    settings.ARBITER_DECISION_RETENTION_DAYS = 365
    make_decision(agent, days_ago(40))
    make_decision(agent, days_ago(3))
    assert decision_log_purge(older_than_days=30, now=NOW) == 1
    assert DecisionRecord.objects.count() == 1


@pytest.mark.parametrize("days", [0, -1])
def test_zero_keeps_everything(agent, settings, days):
    settings.ARBITER_DECISION_RETENTION_DAYS = days
    make_decision(agent, days_ago(5000))
    make_anomaly(agent, days_ago(5000))
    CandidateRequestCount.objects.create(point="intent_routing", agent_id=agent.pk, day=days_ago(5000).date(), count=1)
    assert decision_log_purge(now=NOW) == 0
    assert decision_log_purge(older_than_days=0, now=NOW) == 0
    assert (DecisionRecord.objects.count(), Anomaly.objects.count(), CandidateRequestCount.objects.count()) == (1, 1, 1)


def test_deletes_in_batches(agent):
    """The row-by-row purge (SQLite's; on PostgreSQL it works on the partitioned log all the same)."""
    for d in range(5):
        make_decision(agent, days_ago(100 + d))
    make_decision(agent, days_ago(1))
    deletes: list[str] = []

    from django.db import connection

    def count_deletes(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith('DELETE FROM "RULES_DECISIONRECORD"'):
            deletes.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count_deletes):
        assert decision_log_rows_purge(cutoff=days_ago(30), batch_size=2) == 5

    assert len(deletes) == 3  # 2 + 2 + 1
    assert DecisionRecord.objects.count() == 1


def test_batch_size_must_be_positive(agent):
    with pytest.raises(ValueError, match="batch_size"):
        decision_log_purge(older_than_days=1, batch_size=0)


def test_the_task_runs_eagerly_and_returns_the_count(agent, settings):
    settings.ARBITER_DECISION_RETENTION_DAYS = 30
    now = timezone.now()
    # 90 days back: in a month that ended before the cutoff whatever today is (the PostgreSQL sweep drops
    # whole months).
    make_decision(agent, days_ago(90, now))
    make_decision(agent, days_ago(1, now))
    # ``apply`` runs the task in this process whatever broker is configured (the eager path).
    assert decision_log_purge_task.apply().get() == 1
    assert decision_log_purge_task.apply(kwargs={"older_than_days": 0}).get() == 0
    assert decision_log_purge_task.apply().get() == 0  # idempotent
    assert DecisionRecord.objects.count() == 1
    assert decision_log_purge_task.name == "rules.tasks.decision_log_purge"


def test_a_session_writes_key_goes_once_as_old_as_the_log_kept(agent, settings, caplog):
    """A move's (or interrupt's, resume's, anomaly report's) Idempotency-Key names no decision: the sweep
    deletes it by its own age, and keeps a decision's key with its decision."""
    settings.ARBITER_DECISION_RETENTION_DAYS = 30
    kept_decision = make_decision(agent, days_ago(1))

    def key(name: str, created_at: dt.datetime, decision: DecisionRecord | None = None) -> None:
        DecisionIdempotencyKey.objects.create(
            agent_id=agent.pk,
            key=name,
            created_at=created_at,
            decision=decision,
            operation="move" if decision is None else "decision",
        )

    key("old-move", days_ago(31))
    key("recent-move", days_ago(2))
    key("recent-decision", days_ago(1), kept_decision)
    with caplog.at_level(logging.INFO, logger="rules.decisions.retention"):
        decision_log_purge(now=NOW)
    assert "1 session writes' idempotency keys" in caplog.text
    assert set(DecisionIdempotencyKey.objects.values_list("key", flat=True)) == {"recent-move", "recent-decision"}

"""The retention sweep as Celery runs it.

With a broker configured (CI's PostgreSQL run, ``CELERY_BROKER_URL=redis://…``), a real worker process
is started against the test database pytest-django created, the task is sent through Redis on a queue
of its own, and the rows are gone because that worker deleted them. Without a broker (the SQLite run),
tasks run in-process: the test checks that ``.delay()`` takes that eager path.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from celery.backends.redis import RedisBackend
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult, EagerResult
from django.db import connection
from django.utils import timezone

from decision_service.celery import app as celery_app
from rules.models import DecisionRecord
from rules.tasks import decision_log_purge
from tests.support.worker import RETENTION_DAYS, WAIT_SECONDS, Worker, result_backend_url


def _make_decision(created_at: dt.datetime) -> DecisionRecord:
    return DecisionRecord.objects.create(
        created_at=created_at,
        point="refund_approval",
        agent_name="support_bot",
        decision="auto_approve",
        ruled_by="default",
        revision=1,
    )


def _purge_through_the_worker(worker: Worker) -> int:
    result = decision_log_purge.apply_async(queue=worker.queue)
    assert not isinstance(result, EagerResult), "with a broker configured the task must go through it"
    # The test process may have built its result backend before this test (or without one): read the
    # worker's answer from the backend the worker was given, explicitly.
    backend = RedisBackend(app=celery_app, url=result_backend_url())
    answer = AsyncResult(result.id, app=celery_app, backend=backend)
    deadline = time.monotonic() + WAIT_SECONDS
    try:
        while True:
            try:
                return int(answer.get(timeout=1, interval=0.1))
            except CeleryTimeoutError:
                if worker.process.poll() is not None:
                    pytest.fail(f"the worker exited with {worker.process.returncode} before answering")
                if time.monotonic() > deadline:
                    pytest.fail(f"no answer from the worker within {WAIT_SECONDS} s")
    finally:
        answer.forget()


# Marked rather than requesting ``transactional_db`` only inside the test: a database fixture first
# requested mid-test does not make pytest-django create the test database.
@pytest.mark.django_db(transaction=True)
def test_the_retention_sweep_runs_in_celery(request, settings):
    settings.ARBITER_DECISION_RETENTION_DAYS = RETENTION_DAYS
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # No broker (SQLite run): ``.delay()`` runs the task here and now.
        now = timezone.now()
        for days in (40, 50, 1):
            _make_decision(now - dt.timedelta(days=days))
        result = decision_log_purge.delay()
        assert isinstance(result, EagerResult)
        assert result.get() == 2
        assert DecisionRecord.objects.count() == 1
        return

    if connection.vendor != "postgresql":
        pytest.fail("a real worker needs a database another process can open: run it with DATABASE_URL=postgres://…")
    worker = request.getfixturevalue("worker")
    now = timezone.now()
    old = [_make_decision(now - dt.timedelta(days=days)) for days in (40, 50, 400)]
    kept = _make_decision(now - dt.timedelta(days=1))

    # The polling deadline is the only clock here: an answer later than WAIT_SECONDS already fails.
    deleted = _purge_through_the_worker(worker)

    assert deleted == len(old), f"the worker deleted {deleted} decisions"
    assert list(DecisionRecord.objects.values_list("pk", flat=True)) == [kept.pk]
    assert worker.process.poll() is None  # it is the running worker that answered

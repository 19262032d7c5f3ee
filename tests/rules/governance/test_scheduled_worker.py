"""A scheduled change request goes live through Celery: a real worker and Redis when a broker is
configured (CI's PostgreSQL run), the eager path otherwise (the SQLite run)."""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pytest
from celery.backends.redis import RedisBackend
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult, EagerResult
from django.db import connection
from django.utils import timezone

from decision_service.celery import app as celery_app
from rules.config import records
from rules.config.yaml_import import config_import
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_approve, change_request_schedule
from rules.models import ChangeRequest, Threshold
from rules.tasks import change_requests_apply_due
from tests.support import DEMO_TEXT, make_user, reviewed_digest
from tests.support.worker import WAIT_SECONDS, result_backend_url


def _approved_for_the_past():
    editor, approver = make_user("editor", "config_editors"), make_user("approver", "risk_approvers")
    config_import(text=DEMO_TEXT, source="demo", actor=editor, reason="demo")
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("900")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="night change")
    request = held.value.change_request
    change_request_schedule(request=request, actor=editor, apply_at=timezone.now() + dt.timedelta(seconds=1))
    assert change_request_approve(request=request, digest=reviewed_digest(request), actor=approver).state == "approved"
    ChangeRequest.objects.filter(pk=request.pk).update(apply_at=timezone.now() - dt.timedelta(seconds=1))
    return request


@pytest.mark.django_db(transaction=True)
def test_celery_applies_a_due_change_request_once(request, settings):
    change_request = _approved_for_the_past()
    if settings.CELERY_TASK_ALWAYS_EAGER:
        result = change_requests_apply_due.delay()
        assert isinstance(result, EagerResult) and result.get() == [change_request.pk]
    else:
        if connection.vendor != "postgresql":
            pytest.fail(
                "a real worker needs a database another process can open: run it with DATABASE_URL=postgres://…"
            )
        running = request.getfixturevalue("worker")
        sent = change_requests_apply_due.apply_async(queue=running.queue)
        assert not isinstance(sent, EagerResult), "with a broker configured the task must go through it"
        answer = AsyncResult(sent.id, app=celery_app, backend=RedisBackend(app=celery_app, url=result_backend_url()))
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                applied = answer.get(timeout=1, interval=0.1)
                break
            except CeleryTimeoutError:
                if running.process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("no answer from the worker")
        answer.forget()
        assert applied == [change_request.pk]
    assert Threshold.objects.get(key="auto_refund_limit").value == Decimal("900")
    assert ChangeRequest.objects.get(pk=change_request.pk).state == "applied"
    from rules.governance.change_requests import change_requests_apply_due as apply_due

    assert apply_due() == []  # a second run applies nothing

"""Four-eyes approval through the services (the shell's path), and a request's whole life."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from rules.config import records
from rules.config.selectors import config_document
from rules.errors import (
    ApprovalRequired,
    ChangeRequestSuperseded,
    NotPending,
    PermissionDenied,
    SelfApprovalForbidden,
)
from rules.governance.change_requests import (
    change_request_acknowledge,
    change_request_apply,
    change_request_approve,
    change_request_break_glass,
    change_request_event_line,
    change_request_reject,
    change_request_schedule,
    change_request_update,
    change_request_withdraw,
    change_requests_apply_due,
    config_document_apply,
)
from rules.governance.selectors import (
    change_requests_touching,
    change_requests_under_review,
    change_requests_waiting_for,
)
from rules.models import ChangeRequest, ConfigRevision, Rule, Threshold
from tests.support import make_user, reviewed_digest


def _raise_limit(actor, value="1000"):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal(value)
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=actor, reason=f"raise the limit to {value}")
    return held.value.change_request


def _limit():
    return Threshold.objects.get(key="auto_refund_limit").value


def test_a_high_risk_change_waits_and_touches_nothing_live(demo, editor):
    request = _raise_limit(editor)
    assert _limit() == 500
    assert ConfigRevision.objects.count() == 1
    assert Threshold.objects.get(key="auto_refund_limit").history.count() == 1  # only its creation
    assert (request.state, request.risk, request.author, request.base_revision) == ("pending", "high", editor, 1)
    assert request.reason == "raise the limit to 1000"
    assert [(r["record"], r["why"]) for r in request.risks] == [
        ("threshold auto_refund_limit", "changes value of a high-risk threshold")
    ]
    [change] = request.changes
    assert (change["action"], change["before"]["value"], change["after"]["value"]) == ("change", 500, 1000)


def test_a_low_risk_change_applies_at_once_with_history(demo, editor):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.description = "Refunds above it go to a person."
    records.threshold_save(threshold=threshold, actor=editor, reason="wording")
    assert ConfigRevision.objects.count() == 2
    assert not ChangeRequest.objects.exists()
    assert threshold.history.first().history_change_reason == "wording"


def test_one_save_that_raises_the_bound_and_the_value_together_still_waits(demo, editor):
    # The attack the issue describes: max_value raised in the same form as the value.
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.max_value = Decimal("1000000000")
    threshold.value = Decimal("1000000000")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="no limit")
    assert _limit() == 500
    assert held.value.change_request.risks[0]["why"] == "changes max, value of a high-risk threshold"


def test_the_author_cannot_approve_whatever_their_groups(demo, editor, db):
    both = make_user("both", "config_editors", "risk_approvers")
    request = _raise_limit(both)
    with pytest.raises(SelfApprovalForbidden):
        change_request_approve(request=request, digest=reviewed_digest(request), actor=both)
    assert ChangeRequest.objects.get(pk=request.pk).state == "pending"


def test_only_risk_approvers_approve_or_reject(demo, editor):
    request = _raise_limit(editor)
    other_editor = make_user("other_editor", "config_editors")
    with pytest.raises(PermissionDenied):
        change_request_approve(request=request, digest=reviewed_digest(request), actor=other_editor)
    with pytest.raises(PermissionDenied):
        change_request_reject(request=request, actor=other_editor)
    assert _limit() == 500


def test_approval_applies_it_as_one_revision_whose_history_names_the_request(demo, editor, approver):
    request = _raise_limit(editor)
    done = change_request_approve(
        request=request, digest=reviewed_digest(request), actor=approver, reason="checked with finance"
    )
    assert (done.state, done.applied_revision) == ("applied", 2)
    assert _limit() == 1000
    revision = ConfigRevision.objects.get(number=2)
    assert revision.reason == f"change request {request.pk}: raise the limit to 1000 (approved by approver)"
    assert revision.created_by == editor
    latest = Threshold.objects.get(key="auto_refund_limit").history.first()
    assert latest.history_change_reason == revision.reason
    assert latest.history_user == editor
    assert [e.kind for e in done.events.all()] == ["created", "approved", "applied"]


def test_it_needs_as_many_approvals_as_the_setting_says(demo, editor, approver, approver2, settings):
    settings.ARBITER_REQUIRED_APPROVALS = 2
    request = _raise_limit(editor)
    assert change_request_approve(request=request, digest=reviewed_digest(request), actor=approver).state == "pending"
    again = change_request_approve(
        request=request, digest=reviewed_digest(request), actor=approver
    )  # the same person twice is one approval
    assert (again.state, again.approvals.count(), _limit()) == ("pending", 1, 500)
    assert change_request_approve(request=request, digest=reviewed_digest(request), actor=approver2).state == "applied"
    assert _limit() == 1000


def test_editing_a_pending_request_withdraws_its_approvals(demo, editor, approver, approver2, settings):
    settings.ARBITER_REQUIRED_APPROVALS = 2
    request = _raise_limit(editor)
    change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)
    live = config_document()
    proposal = config_document_apply(live, request.changes)
    next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 800
    edited = change_request_update(request=request, document=proposal, actor=editor)
    assert edited.approvals.count() == 0
    assert edited.changes[0]["after"]["value"] == 800
    assert change_request_event_line(edited.events.last())["detail"] == "approvals withdrawn: approver"
    with pytest.raises(PermissionDenied):
        change_request_update(request=edited, document=proposal, actor=approver)
    change_request_approve(request=edited, digest=reviewed_digest(edited), actor=approver)
    assert change_request_approve(request=edited, digest=reviewed_digest(edited), actor=approver2).state == "applied"
    assert _limit() == 800


def test_reject_and_withdraw_end_a_request(demo, editor, approver):
    rejected = change_request_reject(request=_raise_limit(editor), actor=approver, reason="too much")
    assert rejected.state == "rejected"
    with pytest.raises(NotPending):
        change_request_approve(request=rejected, digest=reviewed_digest(rejected), actor=approver)
    withdrawn_request = _raise_limit(editor, "900")
    with pytest.raises(PermissionDenied):
        change_request_withdraw(request=withdrawn_request, actor=approver)
    assert change_request_withdraw(request=withdrawn_request, actor=editor).state == "withdrawn"
    assert _limit() == 500


def test_a_request_is_superseded_when_a_record_it_touches_changes_first(demo, editor, approver):
    first = _raise_limit(editor, "1000")
    second = _raise_limit(editor, "2000")
    assert [r.pk for r in change_requests_touching(kind="threshold", key="auto_refund_limit")] == [first.pk, second.pk]
    change_request_approve(request=second, digest=reviewed_digest(second), actor=approver)
    first.refresh_from_db()
    assert first.state == "superseded"
    assert first.superseded_by == {"record": "threshold auto_refund_limit", "revision": 2}
    with pytest.raises(ChangeRequestSuperseded):
        change_request_approve(request=first, digest=reviewed_digest(first), actor=approver)
    assert _limit() == 2000


def test_a_request_about_other_records_is_not_superseded(demo, editor, approver):
    limit = _raise_limit(editor)
    rule = Rule.objects.get(key="high_risk_keyword")
    rule.mode = "shadow"
    with pytest.raises(ApprovalRequired) as held:
        records.rule_save(rule=rule, actor=editor, reason="trial")
    change_request_approve(
        request=held.value.change_request, digest=reviewed_digest(held.value.change_request), actor=approver
    )
    limit.refresh_from_db()
    assert limit.state == "pending"
    assert change_request_approve(request=limit, digest=reviewed_digest(limit), actor=approver).state == "applied"


def test_a_scheduled_request_applies_on_time(demo, editor, approver):
    request = _raise_limit(editor)
    soon = timezone.now() + dt.timedelta(hours=1)
    change_request_schedule(request=request, actor=editor, apply_at=soon)
    approved = change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)
    assert approved.state == "approved" and _limit() == 500
    assert change_requests_apply_due(now=soon - dt.timedelta(seconds=1)) == []
    assert change_requests_apply_due(now=soon) == [request.pk]
    assert ChangeRequest.objects.get(pk=request.pk).state == "applied" and _limit() == 1000
    assert change_requests_apply_due(now=soon + dt.timedelta(hours=1)) == []  # never twice


def test_a_scheduled_request_superseded_before_its_time_is_not_applied(demo, editor, approver):
    request = _raise_limit(editor)
    change_request_schedule(request=request, actor=editor, apply_at=timezone.now() + dt.timedelta(hours=1))
    change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)
    second = _raise_limit(editor, "600")
    change_request_approve(request=second, digest=reviewed_digest(second), actor=approver)
    assert change_requests_apply_due(now=timezone.now() + dt.timedelta(hours=2)) == []
    assert ChangeRequest.objects.get(pk=request.pk).state == "superseded"
    assert _limit() == 600


def test_break_glass_applies_at_once_and_leaves_a_review_for_a_second_person(demo, editor, approver):
    request = _raise_limit(editor)
    with pytest.raises(PermissionDenied):
        change_request_break_glass(request=request, actor=approver, digest=reviewed_digest(request), reason="outage")
    on_call = make_user("on_call", "config_editors")
    from django.contrib.auth.models import Permission

    on_call.user_permissions.add(Permission.objects.get(codename="break_glass_changerequest"))
    on_call = type(on_call).objects.get(pk=on_call.pk)  # fresh permission cache
    done = change_request_break_glass(
        request=request, actor=on_call, digest=reviewed_digest(request), reason="refunds stuck during an outage"
    )
    assert done.state == "applied" and _limit() == 1000
    assert list(change_requests_under_review()) == [done]
    with pytest.raises(PermissionDenied):  # a break-glass user without the approver role
        change_request_acknowledge(request=done, actor=on_call)
    change_request_acknowledge(request=done, actor=approver, note="looked fine")
    assert list(change_requests_under_review()) == []


def test_the_admin_index_counts_what_waits_for_each_approver(demo, editor, approver, approver2):
    request = _raise_limit(editor)
    assert list(change_requests_waiting_for(user=approver)) == [request]
    assert list(change_requests_waiting_for(user=editor)) == []
    change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)
    assert list(change_requests_waiting_for(user=approver2)) == []  # applied


def test_the_first_configuration_of_an_installation_applies_directly(db, editor):
    from rules.config.yaml_import import config_import
    from tests.support import DEMO_TEXT

    result = config_import(text=DEMO_TEXT, source="demo", actor=editor, reason="first load")
    assert result.change_request is None and result.revision == 1


def test_approvers_are_emailed_when_a_request_waits(
    demo, editor, approver, django_capture_on_commit_callbacks, monkeypatch
):
    from django.core import mail

    from decision_service.celery import app as celery_app

    # Who is written to and what they read is the point here, so the task runs in this process even when
    # CI configures a broker (mail.outbox lives in this process); tests/rules/test_worker.py covers the
    # broker and a real worker.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    with django_capture_on_commit_callbacks(execute=True):
        request = _raise_limit(editor)
    [message] = mail.outbox
    assert message.to == ["approver@example.com"]  # the author and people without the role are not written to
    assert message.subject == f"[Arbiter] Change request {request.pk} waits for your approval"
    assert f"/admin/rules/changerequest/{request.pk}/change/" in message.body
    assert ChangeRequest.objects.get(pk=request.pk).impact_status == "done"  # the preview ran too


def test_a_request_stands_when_the_broker_cannot_be_reached(
    demo, editor, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    from decision_service.celery import app as celery_app

    # A broker address nothing listens on (port 1), with the app's connection pools dropped so that the
    # next publish connects there, as it does when Redis is down.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)
    monkeypatch.setitem(celery_app.conf, "broker_url", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # Celery reads the variable first
    monkeypatch.setitem(celery_app.conf, "broker_write_url", None)
    monkeypatch.setitem(celery_app.conf, "task_publish_retry", False)
    monkeypatch.setattr(celery_app, "_pool", None)
    monkeypatch.setattr(celery_app.amqp, "_producer_pool", None)
    with django_capture_on_commit_callbacks(execute=True):
        request = _raise_limit(editor)
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert stored.state == "pending"
    assert stored.impact_status == "failed"
    assert stored.impact["error"].startswith("The impact preview could not be queued")
    assert "could not queue rules.tasks.change_request_notify" in caplog.text


def test_applying_is_only_for_an_approved_request(demo, editor, approver):
    """``change_request_apply`` is public (the scheduler calls it, and so can the shell): a pending
    request, which has not had its approvals, is refused and nothing is applied."""
    request = _raise_limit(editor)
    with pytest.raises(NotPending):
        change_request_apply(request=request, actor=editor)
    assert ChangeRequest.objects.get(pk=request.pk).state == "pending" and _limit() == 500

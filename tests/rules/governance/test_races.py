"""Races in the approval workflow (issue 20, item 5), with real threads on PostgreSQL.

Two people act on one request at the same instant — two approvers; approve and reject; approve and the
author's edit; approve and withdraw; break glass and reject — each on its own database connection,
released together by a barrier, several times over. Whatever the interleaving, the request ends in one
consistent state: applied exactly once, as one revision, with ``applied_revision`` set, an approval (or
break glass) on record and the stored change the one that is live — or not applied at all, with
nothing live changed. Each loser gets a refusal with a stable code, never a server error.

SQLite cannot run this: its test database is one in-memory connection that every thread would share
(tests/agents/sessions/test_concurrency.py explains), and SQLite serialises writers anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from decision_service.errors import DomainError
from rules.config import records
from rules.config.selectors import config_document
from rules.errors import ApprovalRequired
from rules.governance.change_requests import (
    change_request_approve,
    change_request_break_glass,
    change_request_reject,
    change_request_update,
    change_request_withdraw,
    config_document_apply,
)
from rules.models import ChangeRequest, ConfigRevision, Threshold
from tests.support import make_user, reviewed_digest

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs concurrent connections to one database: SQLite's test database is one in-memory connection",
    ),
]

ROUNDS = 6


def _limit() -> Decimal:
    return Threshold.objects.get(key="auto_refund_limit").value


def _propose(editor, value: int) -> ChangeRequest:
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal(value)
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason=f"limit {value}")
    return held.value.change_request


def _at_once(*actions: Callable[[], Any]) -> list[Any]:
    """Run the actions in threads released together; each one's result or the refusal it raised."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)

    def run(index: int, action: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = action()
        except DomainError as refused:
            results[index] = refused
        except BaseException as exc:  # a server error: the test fails on it below
            results[index] = exc
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a racing action never finished (a deadlock?)"
    for result in results:
        assert not isinstance(result, BaseException) or isinstance(result, DomainError), repr(result)
    return results


def _codes(results: list[Any]) -> list[str]:
    return sorted(r.code if isinstance(r, DomainError) else "ok" for r in results)


def _assert_consistent(request: ChangeRequest, *, revisions_before: int, live_before: Decimal) -> ChangeRequest:
    """One of two ends, whatever the interleaving: applied exactly once as what is stored, or nothing live."""
    stored = ChangeRequest.objects.get(pk=request.pk)
    revisions = ConfigRevision.objects.count() - revisions_before
    if stored.state == "applied":
        latest = ConfigRevision.objects.order_by("-number").first()
        assert revisions == 1, f"{revisions} revisions cut for one request"
        assert stored.applied_revision == latest.number
        assert stored.approvals.exists() or stored.break_glass_by_id is not None, "applied without approval"
        [change] = stored.changes
        assert _limit() == Decimal(str(change["after"]["value"])), "the live value is not the stored change"
        assert f"change request {stored.pk}:" in latest.reason
    else:
        assert revisions == 0, f"state {stored.state} but {revisions} revision(s) cut"
        assert stored.applied_revision is None and stored.applied_at is None
        assert _limit() == live_before, f"state {stored.state} but the limit moved"
    assert [e.kind for e in stored.events.all()].count("applied") == (1 if stored.state == "applied" else 0)
    return stored


@pytest.fixture
def people(demo, editor, approver, approver2):
    return editor, approver, approver2


def test_two_approvers_at_once_apply_it_once(people):
    editor, approver, approver2 = people
    for round_ in range(ROUNDS):
        request = _propose(editor, 600 + round_)
        digest = reviewed_digest(request)
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=request, d=digest: change_request_approve(request=r, actor=approver, digest=d),
            lambda r=request, d=digest: change_request_approve(request=r, actor=approver2, digest=d),
        )
        assert _codes(results) == ["not_pending", "ok"]
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        assert stored.state == "applied"


def test_approve_against_reject_ends_one_way_or_the_other(people):
    editor, approver, approver2 = people
    ends = set()
    for round_ in range(ROUNDS):
        request = _propose(editor, 700 + round_)
        digest = reviewed_digest(request)
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=request, d=digest: change_request_approve(request=r, actor=approver, digest=d),
            lambda r=request: change_request_reject(request=r, actor=approver2, reason="no"),
        )
        assert _codes(results) == ["not_pending", "ok"]
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        assert stored.state in ("applied", "rejected")
        ends.add(stored.state)
    assert ends  # which one wins is the scheduler's business; that it is consistent is ours


def test_approve_against_the_authors_edit_never_applies_a_change_nobody_approved(people):
    editor, approver, _ = people
    for round_ in range(ROUNDS):
        request = _propose(editor, 800 + round_)
        read = reviewed_digest(request)  # the approver read it before the author's edit
        proposal = config_document_apply(config_document(), request.changes)
        next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 77000 + round_
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=request, d=read: change_request_approve(request=r, actor=approver, digest=d),
            lambda r=request, p=proposal: change_request_update(request=r, document=p, actor=editor),
        )
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        if stored.state == "applied":  # the approval came first: the edit found it no longer pending
            assert _codes(results) == ["not_pending", "ok"]
            assert _limit() == 800 + round_
        else:  # the edit came first: the approval of what was read is refused, nothing is approved
            assert _codes(results) == ["change_request_changed", "ok"]
            assert stored.state == "pending" and not stored.approvals.exists()
            assert stored.changes[0]["after"]["value"] == 77000 + round_
            change_request_withdraw(request=stored, actor=editor)  # out of the next round's way


def test_approve_against_withdraw_ends_one_way_or_the_other(people):
    editor, approver, _ = people
    for round_ in range(ROUNDS):
        request = _propose(editor, 900 + round_)
        digest = reviewed_digest(request)
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=request, d=digest: change_request_approve(request=r, actor=approver, digest=d),
            lambda r=request: change_request_withdraw(request=r, actor=editor),
        )
        assert _codes(results) == ["not_pending", "ok"]
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        assert stored.state in ("applied", "withdrawn")


def test_break_glass_against_reject_ends_one_way_or_the_other(people, db):
    editor, approver, _ = people
    firefighter = make_user("firefighter", "risk_approvers")
    from django.contrib.auth.models import Permission

    firefighter.user_permissions.add(Permission.objects.get(codename="break_glass_changerequest"))
    for round_ in range(ROUNDS):
        request = _propose(editor, 1000 + round_)
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=request: change_request_break_glass(
                request=r, actor=firefighter, digest=reviewed_digest(r), reason="outage"
            ),
            lambda r=request: change_request_reject(request=r, actor=approver, reason="no"),
        )
        assert _codes(results) == ["not_pending", "ok"]
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        assert stored.state in ("applied", "rejected")


def test_the_scheduler_against_reject_of_an_approved_request_ends_one_way_or_the_other(people):
    import datetime as dt

    from django.utils import timezone

    from rules.governance.change_requests import change_request_schedule, change_requests_apply_due

    editor, approver, approver2 = people
    for round_ in range(ROUNDS):
        request = _propose(editor, 1300 + round_)
        soon = timezone.now() + dt.timedelta(minutes=5)
        change_request_schedule(request=request, actor=editor, apply_at=soon)
        approved = change_request_approve(request=request, actor=approver, digest=reviewed_digest(request))
        assert approved.state == "approved"
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda s=soon: change_requests_apply_due(now=s + dt.timedelta(minutes=1)),
            lambda r=request: change_request_reject(request=r, actor=approver2, reason="no"),
        )
        stored = _assert_consistent(request, revisions_before=before, live_before=live)
        applied, rejected = results
        if stored.state == "applied":
            assert applied == [request.pk] and isinstance(rejected, DomainError) and rejected.code == "not_pending"
        else:
            assert stored.state == "rejected" and applied == [] and not isinstance(rejected, DomainError)


def test_two_requests_on_one_record_approved_at_once_apply_one_and_supersede_the_other(people):
    # Applying one supersedes the other, writing its row while holding the configuration writers' lock;
    # the other's approver holds that row's lock. Taken in two orders, the two locks would deadlock.
    editor, approver, approver2 = people
    for round_ in range(ROUNDS):
        first, second = _propose(editor, 1100 + round_), _propose(editor, 1200 + round_)
        one, two = reviewed_digest(first), reviewed_digest(second)
        before, live = ConfigRevision.objects.count(), _limit()
        results = _at_once(
            lambda r=first, d=one: change_request_approve(request=r, actor=approver, digest=d),
            lambda r=second, d=two: change_request_approve(request=r, actor=approver2, digest=d),
        )
        assert _codes(results) == ["change_request_superseded", "ok"]
        ends = sorted(ChangeRequest.objects.get(pk=r.pk).state for r in (first, second))
        assert ends == ["applied", "superseded"]
        applied = first if ChangeRequest.objects.get(pk=first.pk).state == "applied" else second
        _assert_consistent(applied, revisions_before=before, live_before=live)

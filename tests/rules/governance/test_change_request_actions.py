"""Which change request actions a user may take (``change_request_actions``), against what the services
then allow: the admin page shows exactly the buttons this answers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rules.config import records
from rules.errors import ApprovalRequired
from rules.governance.change_request_actions import change_request_actions
from rules.governance.change_requests import change_request_approve, change_request_withdraw
from rules.models import Threshold
from tests.support import reviewed_digest


def _held(actor):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("1000")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=actor, reason="raise the limit")
    return held.value.change_request


def test_the_author_may_edit_and_withdraw_but_not_approve(demo, editor):
    may = change_request_actions(request=_held(editor), actor=editor)
    assert (may.edit, may.withdraw, may.approve, may.reject) == (True, True, False, False)


def test_an_approver_may_approve_once_and_reject(demo, editor, approver):
    request = _held(editor)
    may = change_request_actions(request=request, actor=approver)
    assert (may.approve, may.reject, may.edit, may.withdraw, may.approver_is_author) == (
        True,
        True,
        False,
        False,
        False,
    )
    change_request_approve(request=request, actor=approver, digest=reviewed_digest(request))
    request.refresh_from_db()
    if request.is_open:  # more approvals required: this approver has given theirs
        assert change_request_actions(request=request, actor=approver).approve is False


def test_nothing_is_offered_on_a_closed_request(demo, editor, approver):
    request = _held(editor)
    change_request_withdraw(request=request, actor=editor)
    request.refresh_from_db()
    for actor in (editor, approver):
        may = change_request_actions(request=request, actor=actor)
        assert not (may.approve or may.reject or may.withdraw or may.edit or may.break_glass)

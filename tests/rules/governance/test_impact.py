"""The impact preview counts exactly, on a log built for it; regression cases pin outcomes."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from agents.runtimes.services import agent_create
from agents.sessions.decide import decision_make
from rules.config import records
from rules.decisions.compute import DecideRequest
from rules.errors import ApprovalRequired, OverrideReasonRequired
from rules.governance.change_requests import change_request_approve
from rules.governance.impact import change_request_impact_run
from rules.governance.regressions import regression_case_pin, regressions_check
from rules.models import ChangeRequest, DecisionRecord, RegressionCase, Threshold
from tests.support import make_user, reviewed_digest


@pytest.fixture
def bot(demo, editor):
    agent, _ = agent_create(name="bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t")
    return agent


def _refund(bot, amount, *, days_ago=0):
    result = decision_make(
        agent=bot,
        request=DecideRequest(point="refund_approval", facts={"refund_amount": amount}),
        now=timezone.now() - dt.timedelta(days=days_ago),
    )
    return result.record


def _propose_limit(editor, value):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal(value)
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason=f"limit {value}")
    return held.value.change_request


def test_impact_counts_what_would_change_from_what_to_what(bot, editor):
    amounts = [100, 450, 600, 700, 800, 5000]  # limit 500: the last four go to a person today
    logged = {amount: _refund(bot, amount) for amount in amounts}
    _refund(bot, 650, days_ago=45)  # outside the 30-day window: not replayed
    request = _propose_limit(editor, "750")
    impact = change_request_impact_run(request_id=request.pk)
    assert impact["status"] == "done"
    assert impact["points"] == ["refund_approval"]
    assert (impact["evaluated"], impact["changed"]) == (6, 2)  # 600 and 700 now approved automatically
    assert impact["matrix"] == {"human_handoff": {"auto_approve": 2}}
    assert sorted((e["old"], e["new"], e["decision_id"]) for e in impact["examples"]) == sorted(
        ("human_handoff", "auto_approve", str(logged[a].pk)) for a in (600, 700)
    )
    assert all(e["rule"] is None and e["ruled_by"] == "default" for e in impact["examples"])
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert (stored.impact_status, stored.impact["changed"]) == ("done", 2)


def test_impact_keeps_to_the_most_recent_decisions_per_point(bot, editor, settings):
    settings.ARBITER_IMPACT_DECISIONS = 3
    for days, amount in [(5, 600), (4, 600), (3, 100), (2, 100), (1, 100)]:
        _refund(bot, amount, days_ago=days)
    impact = change_request_impact_run(request_id=_propose_limit(editor, "750").pk)
    assert (impact["evaluated"], impact["changed"]) == (3, 0)


def test_points_the_change_does_not_affect_are_not_replayed(bot, editor):
    decision_make(agent=bot, request=DecideRequest(point="intent_routing", input="我要投诉"))
    impact = change_request_impact_run(request_id=_propose_limit(editor, "750").pk)
    assert impact["points"] == ["refund_approval"] and impact["evaluated"] == 0


def test_a_request_that_breaks_a_pinned_case_needs_an_override_reason(bot, editor, approver):
    record = _refund(bot, 600)
    case = regression_case_pin(record=record, actor=editor, note="600 must go to a person")
    request = _propose_limit(editor, "750")
    impact = change_request_impact_run(request_id=request.pk)
    assert impact["broken_cases"] == [
        {"id": case.pk, "point": "refund_approval", "expected": "human_handoff", "got": "auto_approve"}
    ]
    with pytest.raises(OverrideReasonRequired):
        change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)
    done = change_request_approve(
        request=request, digest=reviewed_digest(request), actor=approver, override_reason="the limit moved on purpose"
    )
    assert done.state == "applied" and done.override_reason == "the limit moved on purpose"


def test_pinning_can_correct_the_expected_outcome(bot, editor):
    record = _refund(bot, 100)
    case = regression_case_pin(record=record, actor=editor, expected="human_handoff", note="small refunds too")
    assert (case.expected, case.decision_id, case.facts) == ("human_handoff", record.pk, {"refund_amount": 100})
    with pytest.raises(Exception, match="not an outcome"):
        regression_case_pin(record=record, actor=editor, expected="refund_now")


def test_check_regressions_lists_each_failing_case_and_fails(bot, editor):
    holding = regression_case_pin(record=_refund(bot, 100), actor=editor)
    corrected = regression_case_pin(record=_refund(bot, 200), actor=editor, expected="human_handoff")
    assert regressions_check()[0] == 2
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 2 regression case"):
        call_command("check_regressions", stdout=out)
    assert out.getvalue().splitlines() == [
        f"case {corrected.pk} refund_approval: expected human_handoff, got auto_approve "
        f"(decision {corrected.decision_id})"
    ]
    RegressionCase.objects.filter(pk=corrected.pk).delete()
    out = io.StringIO()
    call_command("check_regressions", stdout=out)
    assert out.getvalue().strip() == "1 regression case(s) hold."
    assert holding.pk


def test_check_regressions_fails_with_exit_status_1(bot, editor):
    # call_command rather than execute_from_command_line: the latter closes every database connection
    # when it ends, which breaks the test's own transaction on PostgreSQL. run_from_argv exits with the
    # CommandError's returncode, so that is what a shell sees.
    regression_case_pin(record=_refund(bot, 200), actor=editor, expected="human_handoff")
    out = io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("check_regressions", stdout=out)
    assert failed.value.returncode == 1
    assert "expected human_handoff, got auto_approve" in out.getvalue()
    RegressionCase.objects.all().delete()
    out = io.StringIO()
    call_command("check_regressions", stdout=out)  # no case fails: no error
    assert "0 regression case(s) hold." in out.getvalue()


def test_logged_decisions_are_never_changed_by_a_preview(bot, editor):
    record = _refund(bot, 600)
    change_request_impact_run(request_id=_propose_limit(editor, "750").pk)
    assert DecisionRecord.objects.get(pk=record.pk).decision == "human_handoff"


def test_a_decision_is_pinned_from_its_page_in_the_admin(bot, editor, client):
    from django.urls import reverse

    record = _refund(bot, 600)
    client.force_login(editor)
    page = client.get(reverse("admin:rules_decisionrecord_change", args=[record.pk])).content.decode()
    assert 'id="pin-form"' in page and '<option value="human_handoff">human_handoff (as logged)</option>' in page
    response = client.post(
        reverse("admin:rules_decisionrecord_pin", args=[record.pk]), {"expected": "", "note": "keep it"}, follow=True
    )
    case = RegressionCase.objects.get()
    assert (case.expected, case.note, case.created_by) == ("human_handoff", "keep it", editor)
    assert f"Pinned as regression case {case.pk}" in response.content.decode()
    approver_only = make_user("reader", "risk_approvers")
    client.force_login(approver_only)
    assert client.post(reverse("admin:rules_decisionrecord_pin", args=[record.pk])).status_code == 403


def test_a_preview_of_the_change_before_an_edit_never_stands_for_the_edited_one(bot, editor, approver, monkeypatch):
    # The author edits while the first preview is still replaying; the edit's own preview finishes
    # first. The first one's result — no broken case — must not replace the edited change's.
    from rules.config.selectors import config_document
    from rules.governance import impact as impact_module
    from rules.governance.change_requests import change_request_update, config_document_apply

    case = regression_case_pin(record=_refund(bot, 600), actor=editor, note="600 must go to a person")
    request = _propose_limit(editor, "550")  # 600 still goes to a person: breaks nothing
    real_compute = impact_module.impact_compute

    def edited_meanwhile(**kwargs):
        monkeypatch.setattr(impact_module, "impact_compute", real_compute)
        proposal = config_document_apply(config_document(), request.changes)
        next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 750
        change_request_update(request=request, document=proposal, actor=editor)
        assert [c["id"] for c in change_request_impact_run(request_id=request.pk)["broken_cases"]] == [case.pk]
        return real_compute(**kwargs)

    monkeypatch.setattr(impact_module, "impact_compute", edited_meanwhile)
    first = change_request_impact_run(request_id=request.pk)
    assert first["broken_cases"] == []  # what the first run found, about 550
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert [c["id"] for c in stored.impact["broken_cases"]] == [case.pk]
    with pytest.raises(OverrideReasonRequired):
        change_request_approve(request=request, digest=reviewed_digest(request), actor=approver)

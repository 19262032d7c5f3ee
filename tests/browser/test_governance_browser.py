"""Four eyes in a real browser: one person proposes a high-risk threshold change in the admin, a second
sees what it would do to real past traffic and approves it. Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from agents.runtimes.services import agent_create
from agents.sessions.decide import decision_make
from rules.config.yaml_import import config_import
from rules.decisions.compute import DecideRequest
from rules.models import ChangeRequest, Threshold
from tests.support import DEMO
from tests.support.browser import browser_user, log_in

SCREENSHOT = Path("/tmp/arbiter-change-request.png")  # noqa: S108

pytestmark = [pytest.mark.browser]


def test_a_high_risk_change_is_proposed_by_one_person_and_approved_by_another(
    live_server,
    transactional_db,
    chromium_page,
    monkeypatch,
):
    from decision_service.celery import app as celery_app

    # The impact preview is a Celery task: here it runs in the live server's process even when CI
    # configures a broker, as this test is about the admin flow; tests/rules/test_worker.py and
    # tests/rules/governance/test_scheduled_worker.py send tasks through Redis to a real worker.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    editor, _approver = browser_user("li_editor", "config_editors"), browser_user("wang_approver", "risk_approvers")
    config_import(text=DEMO.read_text("utf-8"), source="demo", actor=editor, reason="demo")
    bot, _ = agent_create(name="bot", point_keys=["refund_approval"], actor=None, reason="t")
    for amount in (100, 600, 700, 900):  # today: 600, 700 and 900 go to a person
        decision_make(agent=bot, request=DecideRequest(point="refund_approval", facts={"refund_amount": amount}))
    page = chromium_page

    log_in(page, live_server.url, "li_editor")
    threshold = Threshold.objects.get(key="auto_refund_limit")
    page.goto(f"{live_server.url}/admin/rules/threshold/{threshold.pk}/change/")
    assert "changing its value, its bounds or its high-risk flag needs approval" in page.inner_text("#approval-note")
    page.fill("#id_value", "750")
    page.fill("#id_change_reason", "Peak season: fewer refunds to people")
    page.click("input[name=_save]")
    message = page.wait_for_selector(".messagelist .warning")
    assert "needs a second person's approval" in message.inner_text()
    request = ChangeRequest.objects.get()
    assert page.url.endswith(f"/admin/rules/changerequest/{request.pk}/change/")
    assert page.locator("#approve-form").count() == 0  # not for its author
    threshold.refresh_from_db()
    assert threshold.value == Decimal("500")

    log_in(page, live_server.url, "wang_approver")
    assert "1 waiting for your approval" in page.inner_text("#waiting-for-you")
    page.click("#waiting-for-you a")
    page.click(f"text=#{request.pk}")
    page.wait_for_selector("#impact-summary")
    summary = page.inner_text("#impact-summary")
    assert "4 recent decisions of refund_approval replayed" in summary and "2 would come out differently" in summary
    assert page.locator("#impact-matrix svg").count() == 1
    assert "human_handoff → auto_approve" in page.inner_text("#impact-matrix")
    assert "<td>threshold auto_refund_limit</td>" in page.inner_html("#diff")
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    page.fill("#approve-form input[name=reason]", "Checked with finance")
    page.click("#approve-form input[type=submit]")
    assert "Approved and applied." in page.wait_for_selector(".messagelist .success").inner_text()
    threshold.refresh_from_db()
    assert threshold.value == Decimal("750")
    assert ChangeRequest.objects.get().state == "applied"


def test_the_approve_button_approves_the_diff_the_page_showed_and_nothing_else(
    live_server,
    transactional_db,
    chromium_page,
    monkeypatch,
):
    """Issue 20 item 2 in a real browser: the page shows 555; the author edits the request to 77777 while
    it is open; the approver's click is refused and the page then shows 77777, which a second click
    approves."""
    from decision_service.celery import app as celery_app
    from rules.config import records
    from rules.config.selectors import config_document
    from rules.errors import ApprovalRequired
    from rules.governance.change_requests import change_request_update, config_document_apply

    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    editor, _approver = browser_user("li_editor", "config_editors"), browser_user("wang_approver", "risk_approvers")
    config_import(text=DEMO.read_text("utf-8"), source="demo", actor=editor, reason="demo")
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("555")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="raise the limit to 555")
    request = held.value.change_request
    page = chromium_page

    log_in(page, live_server.url, "wang_approver")
    page.goto(f"{live_server.url}/admin/rules/changerequest/{request.pk}/change/")
    assert page.inner_text("#diff .arbiter-after") == "555"

    proposal = config_document_apply(config_document(), request.changes)
    next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 77777
    change_request_update(request=request, document=proposal, actor=editor)

    page.fill("#approve-form input[name=reason]", "reviewed 555")
    page.click("#approve-form input[type=submit]")
    refusal = page.wait_for_selector(".messagelist .error").inner_text()
    assert "the request was edited after you opened it" in refusal
    assert page.inner_text("#diff .arbiter-after") == "77777"
    assert ChangeRequest.objects.get().state == "pending"
    threshold.refresh_from_db()
    assert threshold.value == Decimal("500")

    page.click("#approve-form input[type=submit]")
    assert "Approved and applied." in page.wait_for_selector(".messagelist .success").inner_text()
    threshold.refresh_from_db()
    assert threshold.value == Decimal("77777")

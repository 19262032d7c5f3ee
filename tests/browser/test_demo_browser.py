"""The demo, as a newcomer runs it: ``demo_setup`` prints two accounts, the admin proposes a high-risk change,
the approver approves it; ``demo_setup --reset`` then puts the demo back through a request the approver
can approve too. Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from rules.models import OPEN_STATES, ChangeRequest, Threshold
from tests.support import groups_ensure

SCREENSHOT = Path("/tmp/arbiter-demo-approver.png")  # noqa: S108

pytestmark = [pytest.mark.browser]


def _demo_setup(*args: str) -> tuple[str, dict[str, str]]:
    out = io.StringIO()
    call_command("demo_setup", *args, stdout=out)
    text = out.getvalue()
    return text, dict(re.findall(r"user (\S+)  password (\S+)", text))


def _log_in(page, url: str, username: str, password: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{url}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


def _approve_the_waiting_request(page, url: str, password: str) -> None:
    _log_in(page, url, "approver", password)
    assert "1 waiting for your approval" in page.inner_text("#waiting-for-you")
    page.click("#waiting-for-you a")
    request = ChangeRequest.objects.get(state__in=OPEN_STATES)
    page.click(f"text=#{request.pk}")
    page.fill("#approve-form input[name=reason]", "Looked at it")
    page.click("#approve-form input[type=submit]")
    assert "Approved and applied." in page.wait_for_selector(".messagelist .success").inner_text()


def test_the_demos_approver_approves_the_admins_high_risk_change_and_the_reset(
    live_server,
    transactional_db,
    chromium_page,
    monkeypatch,
):
    from decision_service.celery import app as celery_app

    # The impact preview runs in the live server's process (see test_governance_browser).
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    groups_ensure()  # a transactional test's flush removed what the migration made
    output, passwords = _demo_setup("--url", live_server.url)
    assert set(passwords) == {"admin", "approver"}
    assert f"Approver:     {live_server.url}/admin/  user approver  password {passwords['approver']}" in output
    page = chromium_page

    _log_in(page, live_server.url, "admin", passwords["admin"])
    threshold = Threshold.objects.get(key="auto_refund_limit")
    page.goto(f"{live_server.url}/admin/rules/threshold/{threshold.pk}/change/")
    page.fill("#id_value", "750")
    page.fill("#id_change_reason", "Peak season")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .warning")
    assert page.locator("#approve-form").count() == 0  # the admin may not approve his own

    _approve_the_waiting_request(page, live_server.url, passwords["approver"])
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    threshold.refresh_from_db()
    assert threshold.value == Decimal("750")

    # Putting the demo back undoes a high-risk change: it waits, and the approver can approve it.
    output, passwords = _demo_setup("--reset", "--url", live_server.url)
    waiting = ChangeRequest.objects.get(state__in=OPEN_STATES)
    assert waiting.author.username == "admin"
    assert f"as change request {waiting.pk}. Sign in as approver" in output
    _approve_the_waiting_request(page, live_server.url, passwords["approver"])
    threshold.refresh_from_db()
    assert threshold.value == Decimal("500")
    assert not ChangeRequest.objects.filter(state__in=OPEN_STATES).exists()

"""A real browser on the rule simulator: a refund decided under the current revision and under a pending
change request's proposal, side by side, with the why panel; saved as a regression case.

Same Chromium and launch arguments as ``test_admin_browser`` (its ``chromium_page`` fixture); skipped
without ``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1``. Screenshots go to /tmp.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from rules.config.document.validate import config_from_yaml
from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.governance.change_requests import change_request_propose
from rules.models import ChangeRequestState, DecisionRecord, RegressionCase

DEMO = Path(__file__).resolve().parents[2] / "demo" / "after_sales.yaml"
SHOTS = Path("/tmp")  # noqa: S108 - where the brief asks for them
USERNAME, PASSWORD = "ops_simulator", "ops-password-1"

pytestmark = [pytest.mark.browser]


def test_simulate_under_the_current_revision_and_a_pending_change_request(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    engines.clear()
    text = DEMO.read_text(encoding="utf-8")
    config_import(text=text, source=str(DEMO), actor=user, reason="browser test")
    raised = text.replace("    value: 500\n", "    value: 99999\n")
    pending = change_request_propose(document=config_from_yaml(raised), actor=user, reason="raise the limit")
    assert pending.state == ChangeRequestState.PENDING
    page = chromium_page

    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.click("#simulator-panel a")
    page.wait_for_selector("#simulator-form")

    page.select_option("#sim-point", "refund_approval")
    page.fill("#sim-facts", '{"refund_amount": 800}')
    page.select_option("#sim-under", "current")
    page.select_option("#sim-compare", f"cr{pending.pk}")
    page.click("input[name=simulate]")
    page.wait_for_selector("#simulation-results")
    sides = page.locator("section.arbiter-sim-side")
    assert sides.count() == 2
    assert sides.nth(0).locator(".arbiter-sim-decision").inner_text() == "human_handoff"
    assert "over_auto_refund_limit" in sides.nth(0).locator("table.arbiter-matched").inner_text()
    assert sides.nth(1).locator(".arbiter-sim-decision").inner_text() == "auto_approve"
    assert f"change request #{pending.pk}" in sides.nth(1).locator("h2.arbiter-sim-label").inner_text()
    # Side by side: the second panel starts to the right of the first, on the same row.
    first, second = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert first is not None and second is not None
    assert second["x"] > first["x"] + first["width"] - 1 and abs(second["y"] - first["y"]) < 2
    page.screenshot(path=str(SHOTS / "arbiter-simulator.png"), full_page=True)
    assert not DecisionRecord.objects.exists()

    page.fill("#save-case input[name=note]", "over the limit goes to a person")
    page.click("input[name=save_case]")
    page.wait_for_selector("ul.messagelist li.success")
    case = RegressionCase.objects.get()
    expected = ("refund_approval", "human_handoff", "over the limit goes to a person")
    assert (case.point, case.expected, case.note) == expected

"""The decision-point map in a real browser: reached from the admin index, charts drawn, the point
filter narrows the page, a number leads to the decisions behind it. Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from rules.config.yaml_import import config_import
from rules.models import DecisionRecord
from tests.support.reports import CONFIG

SCREENSHOT = Path("/tmp/arbiter-decision-map.png")  # noqa: S108
USERNAME, PASSWORD = "ops_map", "ops-map-password-1"

pytestmark = pytest.mark.browser


def test_the_map_renders_with_charts_and_the_point_filter_works(
    live_server,
    transactional_db,
    chromium_page,
):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    config_import(text=CONFIG, source="test", actor=user, reason="setup")
    now = timezone.now()
    logged = ((1, "llm_candidate", "answer"), (2, "hard_rule", "handoff"), (2, "default", "clarify"))
    for days, ruled_by, decision in logged:
        DecisionRecord.objects.create(
            created_at=now - dt.timedelta(days=days),
            point="guarded",
            agent_name="bot",
            decision=decision,
            ruled_by=ruled_by,
            rule_key="complaint" if ruled_by == "hard_rule" else "",
            candidate_decision="answer" if ruled_by != "default" else "",
            overridden=ruled_by == "hard_rule",
            revision=1,
        )
    page = chromium_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.click("#decision-map-link")
    page.wait_for_selector("#map-summary")
    assert page.inner_text("#map-summary") == "1 controlled, 1 partial, 1 naked."
    assert page.locator(".map-point").count() == 3
    for kind in ("ruled-by", "override-rate", "rule-hits"):
        charts = page.locator(f"svg.chart-{kind}")
        assert charts.count() == 3
        box = charts.first.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 20  # laid out, not just in the markup
    assert page.locator("#point-guarded svg.chart-ruled-by rect.bar-hard_rule").count() == 1
    assert page.locator("#point-guarded svg.chart-override-rate circle.dot").count() == 2
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    page.select_option("#id_point", "guarded")
    page.click("#map-filter input[type=submit]")
    page.wait_for_url("**point=guarded**")
    assert page.locator(".map-point").count() == 1
    assert page.locator("#point-guarded .governance").inner_text() == "controlled"
    assert page.inner_text("#point-guarded .n-decisions") == "3"

    page.click("#point-guarded .n-overridden")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == 1
    assert "handoff" in page.inner_text("#result_list tbody tr")

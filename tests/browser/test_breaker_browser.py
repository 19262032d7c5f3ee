"""Tools' breakers in a real browser: an operator opens a tool's breaker with a reason from the admin's
breaker page, sees it open (by hand) and in the history, then closes it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from agents.tools.models import BreakerChange
from rules.config.yaml_import import config_import
from tests.support.breakers import breakers_forget
from tests.support.tools import DEMO_WITH_TOOLS

pytestmark = [pytest.mark.browser]


def test_an_operator_opens_and_closes_a_breaker(live_server, transactional_db, chromium_page):
    breakers_forget()
    config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="demo")
    user = get_user_model().objects.create_user(username="breaker_op", password="breaker_op-pw-1", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="operate_breakers"))
    page = chromium_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "breaker_op")
    page.fill("#id_password", "breaker_op-pw-1")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{live_server.url}/admin/agents/toolbreaker/")
    row = 'tr[data-tool="update_order"]'
    assert page.get_attribute(row, "data-state") == "closed"
    page.fill(f"{row} input[name=reason]", "order system down")
    page.click(f"{row} button[value=open]")
    assert "open until a person closes it" in page.wait_for_selector(".messagelist .success").inner_text()
    assert page.get_attribute(row, "data-state") == "open"
    assert "order system down" in page.inner_text("#breaker-changes")

    page.click(f"{row} button[value=close]")  # the reason is required: the browser does not send it
    assert page.get_attribute(row, "data-state") == "open"
    page.fill(f"{row} input[name=reason]", "back up")
    page.click(f"{row} button[value=close]")
    page.wait_for_selector(".messagelist .success")
    assert page.get_attribute(row, "data-state") == "closed"
    assert list(BreakerChange.objects.order_by("created_at").values_list("action", flat=True)) == ["open", "close"]
    breakers_forget()

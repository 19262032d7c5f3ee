"""A tool contract in a real browser: an editor loosens a write tool's input schema in the admin's YAML
field, and the change waits for a second person; a timeout change applies at once."""

from __future__ import annotations

import pytest

from rules.config.yaml_import import config_import
from rules.models import ChangeRequest, ToolContract
from tests.support.browser import browser_user, log_in
from tests.support.tools import DEMO_WITH_TOOLS

pytestmark = [pytest.mark.browser]


def test_a_write_tools_schema_change_waits_and_its_timeout_does_not(live_server, transactional_db, chromium_page):
    browser_user("li_editor", "config_editors")
    config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="demo")
    tool = ToolContract.objects.get(name="update_order")
    page = chromium_page
    log_in(page, live_server.url, "li_editor")
    url = f"{live_server.url}/admin/rules/toolcontract/{tool.pk}/change/"

    page.goto(url)
    assert "Write or destructive tool: changing its schemas" in page.inner_text("#approval-note")
    assert "receiver_phone:" in page.input_value("#id_input_schema")
    page.fill("#id_input_schema", "type: object\n")
    page.fill("#id_change_reason", "accept any input")
    page.click("input[name=_save]")
    assert "needs a second person's approval" in page.wait_for_selector(".messagelist .warning").inner_text()
    request = ChangeRequest.objects.get()
    assert page.url.endswith(f"/admin/rules/changerequest/{request.pk}/change/")
    assert ToolContract.objects.get(pk=tool.pk).input_schema["additionalProperties"] is False

    page.goto(url)
    page.fill("#id_timeout_ms", "8000")
    page.fill("#id_change_reason", "slower upstream")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert ToolContract.objects.get(pk=tool.pk).timeout_ms == 8000

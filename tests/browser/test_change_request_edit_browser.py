"""The change request's YAML edit form in a real browser: a control character YAML does not allow
(U+0010 pasted from a terminal, say) is a message naming where it is, not a server error, and the
request is left as it was. Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml
from rules.governance.change_requests import change_request_propose
from rules.models import ChangeRequest
from tests.support import DEMO_TEXT, load_demo
from tests.support.browser import browser_user, log_in

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize("char", ["\x10", "\x16", "\x07"], ids=["U+0010", "U+0016", "U+0007"])
def test_a_control_character_in_the_edited_proposal_is_a_message(
    live_server,
    transactional_db,
    chromium_page,
    char,
):
    editor = browser_user("li_editor", "config_editors")
    load_demo(actor=editor)
    raised = DEMO_TEXT.replace("value: 500", "value: 750", 1)
    request = change_request_propose(document=config_from_yaml(raised), actor=editor, reason="peak season")
    assert request.state == "pending"
    before = ChangeRequest.objects.get(pk=request.pk).changes
    page = chromium_page
    log_in(page, live_server.url, "li_editor")
    page.goto(f"{live_server.url}/admin/rules/changerequest/{request.pk}/change/")
    page.click("#edit summary")
    textarea = page.locator("#edit-form textarea[name=config]")
    text = textarea.input_value()
    assert "value: 750" in text
    textarea.fill(text.replace("value: 750", f"value: 7{char}50", 1))
    page.click("#edit-form input[type=submit]")
    message = page.wait_for_selector(".messagelist .error").inner_text()
    assert f"the character U+{ord(char):04X} (column " in message, message
    assert "(line " in message
    assert page.locator("text=Server Error").count() == 0
    assert ChangeRequest.objects.get(pk=request.pk).changes == before

"""A high-risk change made in the admin says one thing: it waits for approval. Django's own "…was changed
successfully." / "…deleted successfully." must not sit above it, for a form save, a delete from the
record's page and a bulk delete alike. Same Chromium as ``test_admin_browser``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rules.config.yaml_import import config_import
from rules.models import ChangeRequest, Rule, Threshold
from tests.support import DEMO_TEXT, make_user

SCREENSHOT = Path("/tmp/arbiter-deferred-message.png")  # noqa: S108

pytestmark = [pytest.mark.browser]


def _messages(page) -> list[tuple[str, str]]:
    page.wait_for_selector(".messagelist li")
    return [
        (item.get_attribute("class") or "", item.inner_text().strip()) for item in page.locator(".messagelist li").all()
    ]


def _only_the_waiting_message(page) -> None:
    request = ChangeRequest.objects.order_by("-pk").first()
    assert request is not None
    assert page.url.endswith(f"/admin/rules/changerequest/{request.pk}/change/")
    assert _messages(page) == [
        (
            "warning",
            "Nothing was changed yet: this change needs a second person's approval. "
            f"It waits in change request {request.pk}.",
        )
    ]


@pytest.fixture
def editor_page(live_server, transactional_db, chromium_page):
    editor = make_user("li_editor", "config_editors")
    config_import(text=DEMO_TEXT, source="demo", actor=editor, reason="demo")
    page = chromium_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "li_editor")
    page.fill("#id_password", "pw-li_editor-123")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    return page


def test_saving_a_high_risk_change_shows_only_that_it_waits(live_server, editor_page):
    page = editor_page
    threshold = Threshold.objects.get(key="auto_refund_limit")
    page.goto(f"{live_server.url}/admin/rules/threshold/{threshold.pk}/change/")
    page.fill("#id_value", "750")
    page.fill("#id_change_reason", "Peak season")
    page.click("input[name=_save]")
    _only_the_waiting_message(page)
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # "Save and continue editing" takes Django's other message path.
    page.goto(f"{live_server.url}/admin/rules/threshold/{threshold.pk}/change/")
    page.fill("#id_min_value", "1")
    page.click("input[name=_continue]")
    _only_the_waiting_message(page)


def test_deleting_a_high_risk_rule_shows_only_that_it_waits(live_server, editor_page):
    page = editor_page
    rule = Rule.objects.get(key="over_auto_refund_limit")
    page.goto(f"{live_server.url}/admin/rules/rule/{rule.pk}/delete/")
    page.click("#content form [type=submit]")
    _only_the_waiting_message(page)
    assert Rule.objects.filter(pk=rule.pk).exists()


def test_bulk_deleting_a_high_risk_rule_shows_only_that_it_waits(live_server, editor_page):
    page = editor_page
    rule = Rule.objects.get(key="high_risk_keyword")
    page.goto(f"{live_server.url}/admin/rules/rule/")
    page.check(f"input[name=_selected_action][value='{rule.pk}']")
    page.select_option("select[name=action]", "delete_selected")
    page.click("button[name=index]")
    page.click("#content form [type=submit]")
    _only_the_waiting_message(page)
    assert Rule.objects.filter(pk=rule.pk).exists()


def test_a_low_risk_save_still_says_it_was_changed(live_server, editor_page):
    page = editor_page
    threshold = Threshold.objects.get(key="auto_refund_limit")
    page.goto(f"{live_server.url}/admin/rules/threshold/{threshold.pk}/change/")
    page.fill("#id_name", "Refund limit")
    page.click("input[name=_save]")
    [(kind, text)] = _messages(page)
    assert kind == "success" and "was changed successfully" in text

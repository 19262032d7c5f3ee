"""A real browser on a session's fields and a machine's picture: the session page lists each field with the
moves that changed it (the phone number never shown), and the machine's picture names the fields a state
requires and the events on its moves — in English, then in Simplified Chinese.

Skipped without ``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1`` (tests/browser/conftest.py).
Screenshots go to /tmp.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from rules.models import StateMachine
from tests.support.field_sessions import PHONE, session_with_field_history

SHOTS = Path("/tmp")  # noqa: S108 - beside the other admin screenshots
USERNAME, PASSWORD = "ops_fields", "ops-password-fields"

pytestmark = pytest.mark.browser


def _log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def _field(page, name: str):
    return page.locator(f'#session-fields tr[data-field="{name}"]')


def _svg_text(page, selector: str) -> str:
    return page.locator(selector).first.text_content() or ""


def test_field_history_and_the_marked_picture_in_english_and_chinese(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    _, session = session_with_field_history(actor=user, note="<script>window.pwned = 1</script>")
    machine = StateMachine.objects.get(key="address_fields")
    page = chromium_page
    base = live_server.url
    session_url = f"{base}/admin/agents/session/{session.pk}/change/"
    machine_url = f"{base}/admin/rules/statemachine/{machine.pk}/change/"
    _log_in(page, base)

    # English: each field, its value now and its changes, latest first.
    page.goto(session_url)
    page.wait_for_selector("#session-fields")
    assert page.locator("#session-fields tr.arbiter-field").evaluate_all("rows => rows.map(r => r.dataset.field)") == [
        "receiver_phone",
        "new_address",
        "note",
    ]
    phone = _field(page, "receiver_phone")
    assert phone.locator(".arbiter-field-value").inner_text() == "[masked]"
    assert "personal data" in phone.inner_text().lower() and "required to enter executing" in phone.inner_text()
    address = _field(page, "new_address").locator("ol.arbiter-field-history li")
    assert address.count() == 2
    latest = address.nth(0).inner_text()
    assert "杭州市西湖区 → 杭州市滨江区" in latest and "#3 by address_bot" in latest
    assert "(collecting_params → executing)" in latest
    note = _field(page, "note")
    assert "cleared" in note.locator("li").nth(0).inner_text()
    assert "<script>window.pwned = 1</script>" in note.inner_text()  # shown as text, never run
    assert page.evaluate("() => window.pwned") is None
    assert PHONE not in page.content()
    page.locator("#session-fields-module").screenshot(path=str(SHOTS / "arbiter-session-fields.png"))

    # The machine's picture: what executing requires, the events on the moves.
    page.goto(machine_url)
    page.wait_for_selector("svg.arbiter-machine")
    assert _svg_text(page, 'g.state[data-state="executing"] text.needs') == "needs receiver_phone, new_address"
    confirm = 'g.edge[data-from="clarify"][data-to="executing"] text.edge-label'
    assert _svg_text(page, confirm) == "confirm [fields new_address]"
    assert page.locator(confirm).is_visible()
    assert page.locator("#id_events").input_value().startswith("- name: confirm\n")
    page.locator("div.arbiter-diagram").screenshot(path=str(SHOTS / "arbiter-machine-marks.png"))

    # Simplified Chinese, as a browser that asks for it.
    page.set_extra_http_headers({"Accept-Language": "zh-hans,zh;q=0.9"})
    page.goto(session_url)
    page.wait_for_selector("#session-fields")
    assert page.locator("#session-fields-module h2").inner_text() == "字段"
    phone = _field(page, "receiver_phone")
    assert "个人数据" in phone.inner_text() and "进入 executing 前必填" in phone.inner_text()
    assert "#3，执行者 address_bot" in _field(page, "new_address").locator("li").nth(0).inner_text()
    assert "已清除" in _field(page, "note").locator("li").nth(0).inner_text()
    page.locator("#session-fields-module").screenshot(path=str(SHOTS / "arbiter-session-fields-zh.png"))
    page.goto(machine_url)
    page.wait_for_selector("svg.arbiter-machine")
    assert _svg_text(page, 'g.state[data-state="executing"] text.needs') == "需要 receiver_phone, new_address"
    assert _svg_text(page, confirm) == "confirm [字段 new_address]"
    page.locator("div.arbiter-diagram").screenshot(path=str(SHOTS / "arbiter-machine-marks-zh.png"))

"""A real browser on the human queue: a person approves the destructive tool call an agent proposed,
and the agent's repeat of the call then goes ahead over HTTP.

Same Chromium as ``test_queue_browser`` (the ``chromium_page`` fixture); skipped without
``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1``. A screenshot goes to /tmp.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agents.runtimes.services import agent_create
from agents.tools.models import ToolCall
from rules.config.runtime import engines
from rules.config.yaml_import import config_import

SHOTS = Path("/tmp")  # noqa: S108 - where the other browser tests put theirs
USERNAME, PASSWORD = "boss_approver", "boss-password-1"
DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: orders
    states: [confirming, human_handoff, done]
    initial: confirming
    handoff: human_handoff
    terminal: [done]
    transitions:
      confirming: [done, human_handoff]
      human_handoff: [done]
    actions:
      confirming: [cancel_order]
tools:
  - name: cancel_order
    input_schema:
      type: object
      properties:
        order_id: {type: string}
        receiver_phone: {type: string}
      required: [order_id]
    risk: destructive
    needs_approval_in: [confirming]
"""
CALL = {
    "tool": "cancel_order",
    "input": {"order_id": "A-1001", "receiver_phone": "13800138000"},
    "expected_state": "confirming",
    "operation_id": "op-browser",
}

pytestmark = pytest.mark.browser


def _agent(base: str, token: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_approve_a_proposed_call_on_the_queue_page(live_server, transactional_db, chromium_page):
    get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    engines.clear()
    config_import(text=DOCUMENT, source="browser test", actor=None, reason="browser test")
    _, token = agent_create(name="order_bot", point_keys=[], actor=None, reason="t")
    base = live_server.url
    assert _agent(base, token, "/api/v1/sessions", {"machine": "orders", "session_id": "chat-9"})[0] == 201
    status, body = _agent(base, token, "/api/v1/sessions/chat-9/tool-calls", CALL)
    assert (status, body["code"]) == (202, "awaiting_approval")

    page = chromium_page
    page.goto(f"{base}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{base}/admin/agents/session/human-queue/?reason=approval")
    row = page.locator("tr.arbiter-queue-row[data-session='chat-9']")
    proposed = row.locator(".arbiter-proposed-call")
    assert proposed.locator(".arbiter-proposed-tool").inner_text() == "cancel_order"
    assert proposed.locator(".arbiter-proposed-operation").inner_text() == "op-browser"
    assert proposed.locator(".arbiter-proposed-risk").inner_text().lower() == "destructive"
    shown_input = proposed.locator(".arbiter-proposed-input").inner_text()
    assert "A-1001" in shown_input and "13800138000" not in shown_input  # masked
    # A reject needs a note: the browser will not send the form without one.
    row.locator("button[name=reject]").click()
    assert ToolCall.objects.get(operation_id="op-browser").status == "awaiting_approval"
    page.screenshot(path=str(SHOTS / "arbiter-queue-approval.png"), full_page=True)

    row.locator(".arbiter-queue-approve input[name=note]").fill("customer confirmed by phone")
    row.locator("button[name=approve]").click()
    page.wait_for_selector("ul.messagelist li.success")
    assert "is approved" in page.inner_text("ul.messagelist")
    assert page.locator("tr.arbiter-queue-row[data-session='chat-9']").count() == 0

    status, body = _agent(base, token, "/api/v1/sessions/chat-9/tool-calls", CALL)
    assert status == 201, body
    assert body["operation_id"] == "op-browser"

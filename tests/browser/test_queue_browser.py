"""A real browser on the human queue: an operator claims a session a rule handed over, returns it to
the bot, and the agent reads the new state over HTTP.

Same Chromium and launch arguments as ``test_admin_browser`` (its ``chromium_page`` fixture); skipped
without ``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1``. Screenshots go to /tmp.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agents.runtimes.services import agent_create
from agents.sessions.models import Session, Transition
from rules.config.runtime import engines
from rules.config.yaml_import import config_import

DEMO = Path(__file__).resolve().parents[2] / "demo" / "after_sales.yaml"
SHOTS = Path("/tmp")  # noqa: S108 - where the brief asks for them
USERNAME, PASSWORD = "ops_queue", "ops-password-1"

pytestmark = pytest.mark.browser


def _agent_call(base: str, token: str, method: str, path: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.loads(response.read())


def test_claim_then_return_to_the_bot_and_the_agent_sees_it(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    engines.clear()
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=user, reason="browser test")
    _, token = agent_create(name="support_bot", point_keys=["intent_routing"], actor=user, reason="t")
    base = live_server.url
    _agent_call(base, token, "POST", "/api/v1/sessions", {"machine": "after_sales", "session_id": "chat-7"})
    decided = _agent_call(
        base,
        token,
        "POST",
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "chat-7", "input": "我要投诉你们", "apply": True},
    )
    assert decided["session"]["state"] == "human_handoff"
    page = chromium_page

    page.goto(f"{base}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    # The admin index says how many wait, and leads to the queue.
    assert "1 session waiting for a person" in page.inner_text("#human-queue-panel")
    page.click("#human-queue-waiting a")
    page.wait_for_selector("#human-queue")
    row = page.locator("tr.arbiter-queue-row[data-session='chat-7']")
    assert "rule" in row.locator(".arbiter-queue-reason").inner_text()
    assert "unclaimed" in row.locator(".arbiter-queue-holder").inner_text()

    row.locator("button[name=claim]").click()
    page.wait_for_selector("ul.messagelist li.success")
    assert "You have chat-7 now." in page.inner_text("ul.messagelist")
    row = page.locator("tr.arbiter-queue-row[data-session='chat-7']")
    assert "you" in row.locator(".arbiter-queue-holder").inner_text()
    seen = _agent_call(base, token, "GET", "/api/v1/sessions/chat-7")
    assert (seen["state"], seen["claimed_by"]) == ("human_handoff", USERNAME)
    page.screenshot(path=str(SHOTS / "arbiter-queue-claimed.png"), full_page=True)

    # Only the states the machine allows from human_handoff (and not terminal) are offered.
    options = row.locator(".arbiter-queue-return select option").all_inner_texts()
    assert options == ["escalated"]
    row.locator(".arbiter-queue-return input[name=note]").fill("customer calmed down")
    row.locator("button[name=return]").click()
    page.wait_for_selector("ul.messagelist li.success")
    assert "Session chat-7 is back with the bot, in escalated." in page.inner_text("ul.messagelist")
    assert page.locator("#human-queue-empty").count() == 1
    page.screenshot(path=str(SHOTS / "arbiter-queue-returned.png"), full_page=True)

    seen = _agent_call(base, token, "GET", "/api/v1/sessions/chat-7")
    assert (seen["state"], seen["claimed_by"], seen["anomalies"]["count"]) == ("escalated", None, 0)
    assert seen["allowed_transitions"] == ["closed"]
    session = Session.objects.get(key="chat-7")
    move = Transition.objects.get(session=session, seq=session.seq)
    assert (move.kind, move.actor, move.reason) == ("return", f"operator:{USERNAME}", "customer calmed down")

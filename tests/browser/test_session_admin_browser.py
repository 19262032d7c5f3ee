"""A real browser on the sessions admin: a session's timeline, the human queue and a machine's picture.

Same Chromium and launch arguments as ``test_admin_browser`` (its ``chromium_page`` fixture); skipped
without ``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1``. Screenshots go to /tmp.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.models import StateMachine
from tests.support import DEMO

SHOTS = Path("/tmp")  # noqa: S108 - where the brief asks for them
USERNAME, PASSWORD = "ops_sessions", "ops-password-1"

pytestmark = pytest.mark.browser


def _post(api: APIClient, path: str, body: dict, status: int) -> dict:
    response = api.post(path, body, format="json")
    assert response.status_code == status, response.content
    return response.json()


def _session_with_history(user) -> Session:
    engines.clear()
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=user, reason="browser test")
    _, token = agent_create(name="support_bot", point_keys=["intent_routing"], actor=user, reason="t")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    _post(api, "/api/v1/sessions", {"machine": "after_sales", "session_id": "chat-42"}, 201)
    decide = {"point": "intent_routing", "session_id": "chat-42", "input": "我要退款", "apply": True}
    _post(api, "/api/v1/decisions", decide, 201)  # falls back to intent_clarify, with an anomaly
    _post(api, "/api/v1/sessions/chat-42/transitions", {"to": "closed", "expected_state": "intent_clarify"}, 422)
    _post(api, "/api/v1/sessions/chat-42/interrupt", {"to": "refund_review", "expected_state": "intent_clarify"}, 200)
    _post(api, "/api/v1/sessions/chat-42/resume", {"expected_state": "refund_review"}, 200)
    _post(api, "/api/v1/sessions/chat-42/transitions", {"to": "human_handoff", "expected_state": "intent_clarify"}, 200)
    # Another session, twenty minutes in "received": stuck, so it heads the list.
    _post(api, "/api/v1/sessions", {"machine": "after_sales", "session_id": "chat-43"}, 201)
    _post(api, "/api/v1/sessions/chat-43/transitions", {"to": "received", "expected_state": "init"}, 200)
    Session.objects.filter(key="chat-43").update(state_entered_at=timezone.now() - dt.timedelta(minutes=20))
    engines.clear()
    return Session.objects.get(key="chat-42")


def test_session_timeline_queue_and_machine_picture_in_the_browser(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    session = _session_with_history(user)
    machine = StateMachine.objects.get(key="after_sales")
    page = chromium_page

    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # The agents app page leads to the human queue too.
    page.goto(f"{live_server.url}/admin/agents/")
    assert page.locator("#human-queue-module a", has_text="Human queue").count() == 1
    page.screenshot(path=str(SHOTS / "arbiter-agents-app.png"), full_page=True)

    # The list: open sessions, with a way to the human queue.
    page.set_viewport_size({"width": 1600, "height": 900})  # room for every column next to the filters
    page.goto(f"{live_server.url}/admin/agents/session/")
    keys = page.locator("#result_list tbody th.field-session_id").all_inner_texts()
    assert keys == ["chat-43", "chat-42"]
    assert page.locator("#result_list tbody tr").first.locator(".arbiter-badge-stuck").count() == 1
    page.screenshot(path=str(SHOTS / "arbiter-sessions.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("text=Human queue (1)")
    page.wait_for_selector("#human-queue")
    assert "intent_clarify → human_handoff" in page.inner_text("#human-queue")
    page.screenshot(path=str(SHOTS / "arbiter-human-queue.png"), full_page=True)

    # The session page: the header and the interleaved timeline.
    page.click("#human-queue >> text=chat-42")
    page.wait_for_selector("#session-timeline")
    assert page.url.endswith(f"/admin/agents/session/{session.pk}/change/")
    kinds = page.locator("#session-timeline tbody tr").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert kinds == ["decision", "anomaly", "transition", "anomaly", "transition", "transition", "transition"]
    assert "intent_clarify → human_handoff" in page.locator("#session-timeline tr[data-seq='4']").inner_text()
    header = page.inner_text("#session-facts")
    assert "human_handoff · 4" in header
    assert "closed, escalated" in page.inner_text("#session-allowed-transitions")
    page.screenshot(path=str(SHOTS / "arbiter-session.png"), full_page=True)

    # The timeline's decision links to its why panel.
    page.locator("#session-timeline tr[data-kind='decision'] a", has_text="why").first.click()
    page.wait_for_selector("#why-panel")

    # The machine page: the picture, one box per state and one arrow per allowed move.
    page.goto(f"{live_server.url}/admin/rules/statemachine/{machine.pk}/change/")
    page.wait_for_selector("svg.arbiter-machine")
    assert page.locator("svg.arbiter-machine g.state").count() == len(machine.states)
    moves = sum(len(targets) for targets in machine.transitions.values())
    assert page.locator("svg.arbiter-machine g.edge").count() == moves
    box = page.locator("svg.arbiter-machine g.state[data-state='human_handoff'] rect").first.bounding_box()
    assert box is not None and box["width"] > 40 and box["height"] > 20
    page.locator("div.arbiter-diagram").screenshot(path=str(SHOTS / "arbiter-machine-picture.png"))
    page.screenshot(path=str(SHOTS / "arbiter-machine.png"), full_page=True)

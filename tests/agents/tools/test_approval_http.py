"""Approving and rejecting a proposed tool call over HTTP: the staff API (``POST /api/v1/queue/<id>/approve``
and ``…/reject``, the queue list's ``proposed_call``) and the human queue page, through Django's test
client; who may, who may not, and what the agent then sees of its session."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from agents.queue.models import QueueEvent
from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from agents.tools.models import ToolCall
from rules.governance.tokens import staff_token_create
from tests.support import load_demo, make_user, post
from tests.support.approvals import MASKED_INPUT, approver, call_waiting, session_in_collecting

pytestmark = pytest.mark.django_db
QUEUE = "admin:agents_session_human_queue"


@pytest.fixture
def agent(db):
    load_demo()
    made, token = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    made.api = client
    return made


def staff_api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def waiting_session(agent, key: str = "c1") -> tuple[Session, ToolCall]:
    session = session_in_collecting(agent, key)
    return session, call_waiting(agent, session, operation_id=f"op-{key}")


def test_the_queue_lists_the_proposed_call(agent):
    session, call = waiting_session(agent)
    other = session_in_collecting(agent, "c2")
    assert (
        post(
            agent.api, "/api/v1/sessions/c2/transitions", {"to": "human_handoff", "expected_state": "collecting_params"}
        ).status_code
        == 200
    )
    listed = staff_api(make_user("ops", "queue_operators")).get("/api/v1/queue").json()["queue"]
    by_id = {item["id"]: item for item in listed}
    assert by_id[other.pk]["proposed_call"] is None and by_id[other.pk]["reason"] == "agent"
    proposed = by_id[session.pk]["proposed_call"]
    assert by_id[session.pk]["reason"] == "approval"
    assert {k: v for k, v in proposed.items() if k != "asked_at"} == {
        "operation_id": call.operation_id,
        "tool": "update_order",
        "input": MASKED_INPUT,
        "risk": "destructive",
        "state": "collecting_params",
    }
    assert proposed["asked_at"]


def test_approve_over_the_staff_api_and_the_agent_sees_the_outcome(agent):
    session, call = waiting_session(agent)
    # While it waits, the agent's session object says so.
    seen = agent.api.get("/api/v1/sessions/c1").json()["session"]
    assert (seen["state"], seen["handed_off"], seen["handoff_reason"]) == ("human_handoff", True, "approval")
    answer = post(staff_api(approver("boss", "queue_operators")), f"/api/v1/queue/{session.pk}/approve", {"note": "ok"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert {
        k: body[k] for k in ("id", "session_id", "operation_id", "tool", "status", "decided_by", "note", "state", "seq")
    } == {
        "id": session.pk,
        "session_id": "c1",
        "operation_id": call.operation_id,
        "tool": "update_order",
        "status": "approved",
        "decided_by": "boss",
        "note": "ok",
        "state": "collecting_params",
        "seq": 4,
    }
    seen = agent.api.get("/api/v1/sessions/c1").json()["session"]
    assert (seen["state"], seen["handed_off"]) == ("collecting_params", False)
    timeline = agent.api.get("/api/v1/sessions/c1/timeline").json()["events"]
    last = [(e["type"], e.get("kind")) for e in timeline][-3:]
    assert last == [("state_transition", "approval"), ("queue", "approve"), ("state_transition", "approval")]
    again = post(staff_api(approver("late")), f"/api/v1/queue/{session.pk}/approve", {})
    assert again.status_code == 409 and again.json()["code"] == "not_awaiting_approval"
    assert again["Content-Type"].startswith("application/problem+json")


def test_reject_over_the_staff_api_needs_a_note(agent):
    session, _call = waiting_session(agent)
    boss = staff_api(approver("boss"))
    refused = post(boss, f"/api/v1/queue/{session.pk}/reject", {})
    assert refused.status_code == 422 and "note" in refused.json()["errors"]
    blank = post(boss, f"/api/v1/queue/{session.pk}/reject", {"note": "  "})
    assert blank.status_code == 422 and blank.json()["code"] == "invalid_request"
    done = post(boss, f"/api/v1/queue/{session.pk}/reject", {"note": "wrong order"})
    assert done.status_code == 200 and done.json()["status"] == "rejected"
    assert list(QueueEvent.objects.values_list("kind", "note")) == [("reject", "wrong order")]


@pytest.mark.parametrize("step", ["approve", "reject"])
def test_without_the_permission_or_with_an_agent_token_it_is_refused(agent, step):
    session, call = waiting_session(agent)
    body = {"note": "n"}
    queue_operator = post(staff_api(make_user("ops", "queue_operators")), f"/api/v1/queue/{session.pk}/{step}", body)
    assert queue_operator.status_code == 403 and queue_operator.json()["code"] == "permission_denied"
    as_agent = post(agent.api, f"/api/v1/queue/{session.pk}/{step}", body)
    assert as_agent.status_code in (401, 403), as_agent.content
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    assert Session.objects.get(pk=session.pk).state == "human_handoff"


def test_a_session_that_waits_for_no_call_and_an_unknown_one(agent):
    session = session_in_collecting(agent, "c1")
    boss = staff_api(approver("boss"))
    not_waiting = post(boss, f"/api/v1/queue/{session.pk}/approve", {})
    assert not_waiting.status_code == 409 and not_waiting.json()["code"] == "not_awaiting_approval"
    unknown = post(boss, "/api/v1/queue/999999/approve", {})
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_session"


def _page_approver(username: str):
    user = approver(username)
    user.user_permissions.add(Permission.objects.get(codename="view_session", content_type__app_label="agents"))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_queue_page_shows_the_proposed_call_and_approves_it(agent, language):
    session, call = waiting_session(agent)
    page_client = _page_approver("boss")
    with translation.override(language):
        url = reverse(QUEUE)
    page = page_client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    html = page.content.decode()
    assert page.status_code == 200
    assert f'data-operation="{call.operation_id}"' in html and "update_order" in html and "138****8000" in html
    approve_url = reverse("admin:agents_session_human_queue_act", args=[session.pk, "approve"])
    assert f'action="{approve_url}"' in html
    if language == "zh-hans":
        assert "批准" in html
    done = page_client.post(approve_url, {"next": url, "note": ""}, follow=True, HTTP_ACCEPT_LANGUAGE=language)
    assert done.status_code == 200
    assert ToolCall.objects.get(pk=call.pk).status == "approved"
    assert Session.objects.get(pk=session.pk).state == "collecting_params"
    assert 'data-operation="' not in done.content.decode()


def test_the_queue_page_rejects_only_with_a_note_and_hides_the_buttons_without_the_permission(agent):
    session, call = waiting_session(agent)
    reject_url = reverse("admin:agents_session_human_queue_act", args=[session.pk, "reject"])
    looker = Client()
    looker.force_login(make_user("ops", "queue_operators"))
    html = looker.get(reverse(QUEUE)).content.decode()
    assert f'data-operation="{call.operation_id}"' in html  # shown to whoever sees the queue
    assert reject_url not in html and "arbiter-queue-approve" not in html
    tried = looker.post(reject_url, {"note": "no"}, follow=True)
    assert re.search(r"approve_tool_calls", tried.content.decode())
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    boss = _page_approver("boss")
    assert reject_url in boss.get(reverse(QUEUE)).content.decode()
    boss.post(reject_url, {"note": ""}, follow=True)
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    boss.post(reject_url, {"note": "wrong order"}, follow=True)
    call.refresh_from_db()
    assert (call.status, call.decision_note, call.decided_by.username) == ("rejected", "wrong order", "boss")

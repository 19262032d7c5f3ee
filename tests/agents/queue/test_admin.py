"""The human queue page as a work queue: filters, claim / release / return / resolve buttons through the
queue services, refusals shown as messages, and the count on the admin index."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from agents.queue.models import QueueEvent
from agents.queue.services import queue_claim
from agents.runtimes.services import agent_create
from agents.sessions.models import Session, Transition
from rules.config.runtime import engines
from rules.config.yaml_import import config_import

DEMO = Path(__file__).resolve().parents[3] / "demo" / "after_sales.yaml"
QUEUE = "admin:agents_session_human_queue"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def api(actor) -> APIClient:
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=actor, reason="test demo")
    _, token = agent_create(name="support_bot", point_keys=["intent_routing"], actor=actor, reason="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def user(username: str, *, operator: bool = True):
    made = get_user_model().objects.create_user(username=username, password=f"{username}-pw-123", is_staff=True)
    made.groups.add(Group.objects.get(name="queue_operators" if operator else "risk_approvers"))
    if not operator:  # may look at sessions, may not work the queue
        made.user_permissions.add(Permission.objects.get(codename="view_session", content_type__app_label="agents"))
    return made


def browser(u) -> Client:
    client = Client()
    client.force_login(u)
    return client


def waiting(api: APIClient, key: str, *, by_rule: bool = False) -> Session:
    assert api.post("/api/v1/sessions", {"machine": "after_sales", "session_id": key}, format="json").status_code == 201
    if by_rule:
        body = {"point": "intent_routing", "session_id": key, "input": "我要投诉", "apply": True}
        assert api.post("/api/v1/decisions", body, format="json").status_code == 201
    else:
        body = {"to": "human_handoff", "expected_state": "init"}
        assert api.post(f"/api/v1/sessions/{key}/transitions", body, format="json").status_code == 200
    return Session.objects.get(key=key)


def rows(html: str) -> list[str]:
    return re.findall(r'<tr class="arbiter-queue-row" data-session="([^"]+)"', html)


def act(client: Client, session: Session, step: str, **data: str):
    url = reverse("admin:agents_session_human_queue_act", args=[session.pk, step])
    return client.post(url, {"next": reverse(QUEUE), **data}, follow=True)


def test_claim_return_and_resolve_from_the_queue_page(api):
    ops = browser(user("ana"))
    first, second = waiting(api, "first", by_rule=True), waiting(api, "second")
    page = ops.get(reverse(QUEUE)).content.decode()
    assert rows(page) == ["first", "second"]
    assert page.count('name="claim"') == 2 and "Return to the bot" in page and "Resolve" in page

    done = act(ops, first, "claim").content.decode()
    assert "You have first now." in done
    assert Session.objects.get(pk=first.pk).claimed_by.username == "ana"
    assert rows(ops.get(reverse(QUEUE) + "?holder=mine").content.decode()) == ["first"]
    assert rows(ops.get(reverse(QUEUE) + "?holder=unclaimed").content.decode()) == ["second"]
    assert rows(ops.get(reverse(QUEUE) + "?reason=rule").content.decode()) == ["first"]
    assert rows(ops.get(reverse(QUEUE) + "?reason=agent").content.decode()) == ["second"]

    done = act(ops, first, "return", state="escalated", note="found the order").content.decode()
    assert "Session first is back with the bot, in escalated." in done
    t = Transition.objects.filter(session=first).latest("seq")
    assert (t.kind, t.actor, t.reason, t.to_state) == ("return", "operator:ana", "found the order", "escalated")

    refused = act(ops, second, "resolve", state="closed", note="").content.decode()
    assert "the note is required" in refused
    done = act(ops, second, "resolve", state="closed", note="refunded by phone").content.decode()
    assert "Session second is resolved: it ended in closed." in done
    assert "No session is waiting for a person." in ops.get(reverse(QUEUE)).content.decode()


def test_a_session_someone_else_holds_shows_who_and_refuses(api):
    li = user("li")
    session = waiting(api, "held")
    queue_claim(session_pk=session.pk, user=li)
    ops = browser(user("ana"))
    page = ops.get(reverse(QUEUE)).content.decode()
    assert "li" in re.search(r'class="arbiter-queue-holder">(.*?)</td>', page, re.S).group(1)
    assert "held by someone else" in page and 'name="claim"' not in page
    refused = act(ops, session, "return", state="escalated").content.decode()
    assert "li has this session" in refused
    assert Session.objects.get(pk=session.pk).state == "human_handoff"
    illegal = act(browser(li), session, "return", state="closed").content.decode()
    assert "is not a non-terminal state to return to" in illegal


def test_without_the_permission_the_queue_is_read_only(api):
    session = waiting(api, "w")
    viewer = browser(user("viewer", operator=False))
    page = viewer.get(reverse(QUEUE))
    assert page.status_code == 200 and rows(page.content.decode()) == ["w"]
    assert 'name="claim"' not in page.content.decode()
    refused = act(viewer, session, "claim").content.decode()
    assert "agents.work_human_queue" in refused
    assert not QueueEvent.objects.exists()
    assert viewer.get(reverse("admin:agents_session_human_queue_act", args=[session.pk, "claim"])).status_code == 405


def test_the_admin_index_shows_how_many_wait(api, staff_user):
    waiting(api, "a")
    b = waiting(api, "b")
    queue_claim(session_pk=b.pk, user=staff_user)
    html = browser(staff_user).get(reverse("admin:index")).content.decode()
    panel = re.search(r'<div class="module" id="human-queue-panel">(.*?)</div>', html, re.S).group(1)
    assert "2 sessions waiting for a person" in panel
    assert "1 unclaimed" in panel and "1 yours" in panel


def test_the_timeline_shows_claims_and_releases(api, staff_user):
    session = waiting(api, "t")
    ops = browser(staff_user)
    act(ops, session, "claim", note="taking it")
    act(ops, session, "release")
    html = ops.get(reverse("admin:agents_session_change", args=[session.pk])).content.decode()
    kinds = re.findall(r'data-kind="(\w+)"', html)
    assert kinds[-2:] == ["queue", "queue"]
    assert "claimed" in html and "taking it" in html and "by operator:ops" in html

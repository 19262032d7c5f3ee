"""The admin's breaker page through Django's test client: each tool contract with its breaker and recent
failures, open and close with a required reason for people allowed to, the record of changes, in
English and in Chinese."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from agents.tools.gate import OPEN, breaker_record, breaker_state
from agents.tools.models import BreakerChange, ToolAttempt, ToolCall
from rules.config.yaml_import import config_import
from rules.models import StateMachine
from tests.support.tools import DEMO_WITH_TOOLS

PAGE = "/admin/agents/toolbreaker/"
BREAKER = {"failure_threshold": 3, "window_s": 60, "half_open_after_ms": 30000, "trial_calls": 1}


@pytest.fixture
def tools(db):
    config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="demo")


def person(username: str, *permissions: str) -> Client:
    user = get_user_model().objects.create_user(username=username, password=f"pw-{username}-123", is_staff=True)
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="agents", codename=codename))
    client = Client()
    client.force_login(user)
    return client


def failed_attempt(tool: str, code: str, *, ago: timedelta) -> None:
    agent, _ = agent_create(
        name=f"bot_{code.lower()}_{int(ago.total_seconds())}", point_keys=[], actor=None, reason="t"
    )
    session = Session.objects.create(
        agent=agent,
        machine=StateMachine.objects.first(),
        key=f"s-{agent.pk}",
        state="x",
        state_entered_at=timezone.now(),
    )
    call = ToolCall.objects.create(
        operation_id=f"op-{agent.pk}",
        agent=agent,
        session=session,
        tool=tool,
        state="x",
        risk="write",
        input_digest="d",
        status="gave_up",
    )
    now = timezone.now()
    ToolAttempt.objects.create(
        call=call,
        attempt=1,
        tool=tool,
        started_at=now - ago,
        deadline=now,
        finished_at=now - ago,
        outcome="error",
        error_code=code,
    )


def test_the_page_lists_each_tool_with_its_breaker_and_recent_failures_by_code(tools):
    for _ in range(3):
        breaker_record("update_order", breaker=BREAKER, ok=False)
    failed_attempt("update_order", "UPSTREAM_TIMEOUT", ago=timedelta(seconds=10))
    failed_attempt("update_order", "ORDER_LOCKED", ago=timedelta(seconds=120))  # out of the 60 s window
    page = person("watcher", "view_toolbreaker").get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    for tool in ("verify_phone", "query_order", "update_order"):
        assert f'data-tool="{tool}"' in html
    assert 'data-tool="update_order" data-state="open"' in html
    assert "<code>UPSTREAM_TIMEOUT</code> × 1" in html and "ORDER_LOCKED" not in html
    assert 'name="action"' not in html  # seeing is not operating
    # The demo's query_order breaker does not count rate limits (circuit_breaker.ignore_codes): said so.
    assert "not counted: RATE_LIMIT_EXCEEDED" in html


def test_open_and_close_with_a_reason_are_recorded(tools):
    operator = person("op", "operate_breakers")
    url = reverse("admin:agents_toolbreaker_change_breaker", args=["query_order"])
    page = operator.get(PAGE).content.decode()
    assert f'action="{url}"' in page
    refused = operator.post(url, {"action": "open", "reason": "  "}, follow=True)
    assert "Say why" in refused.content.decode() and not BreakerChange.objects.exists()
    done = operator.post(url, {"action": "open", "reason": "supplier outage"}, follow=True)
    assert "open until a person closes it" in done.content.decode()
    query_breaker = {"failure_threshold": 5, "window_s": 30, "half_open_after_ms": 10000, "trial_calls": 2}
    assert breaker_state("query_order", breaker=query_breaker) == OPEN
    assert "supplier outage" in done.content.decode()  # the history below the list
    operator.post(url, {"action": "close", "reason": "supplier back"})
    assert breaker_state("query_order", breaker=query_breaker) == "closed"
    assert list(BreakerChange.objects.order_by("created_at").values_list("action", "actor", "reason")) == [
        ("open", "operator:op", "supplier outage"),
        ("close", "operator:op", "supplier back"),
    ]


def test_without_the_permission_nothing_changes(tools):
    url = reverse("admin:agents_toolbreaker_change_breaker", args=["query_order"])
    assert person("nobody").get(PAGE).status_code == 403
    assert person("nobody2").post(url, {"action": "open", "reason": "x"}).status_code == 403
    answer = person("watcher", "view_toolbreaker").post(url, {"action": "open", "reason": "x"}, follow=True)
    assert "agents.operate_breakers" in answer.content.decode()
    assert not BreakerChange.objects.exists()


def test_the_page_speaks_chinese(tools):
    client = person("op", "operate_breakers")
    page = client.get(PAGE, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "工具熔断器" in page and "Tool circuit breakers" not in page


def test_the_change_history_is_read_only(tools):
    client = person("op", "operate_breakers")
    assert client.get(reverse("admin:agents_breakerchange_changelist")).status_code == 200
    assert client.get(reverse("admin:agents_breakerchange_add")).status_code == 403

"""The staff API of tools' breakers over the HTTP layer: listing, opening and closing by hand with a
reason, the permissions each asks for, and no way in with an agent's token."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from agents.tools.errors import CircuitOpen
from agents.tools.gate import CLOSED, OPEN, breaker_record, gate_enter
from agents.tools.models import BreakerChange
from rules.config.yaml_import import config_import
from tests.support.breakers import by_tool, staff, wall_deadline
from tests.support.tools import DEMO_WITH_TOOLS

BREAKER = {"failure_threshold": 3, "window_s": 60, "half_open_after_ms": 30000, "trial_calls": 1}


@pytest.fixture
def tools(db):
    config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="demo")


def test_the_list_shows_each_contract_with_its_breaker(tools):
    breaker_record("update_order", breaker=BREAKER, ok=False)
    response = staff("watcher", "agents.view_toolbreaker").get("/api/v1/tools/breakers")
    assert response.status_code == 200, response.content
    items = by_tool(response.json())
    assert sorted(items) == ["query_order", "update_order", "verify_phone"]
    assert items["update_order"]["state"] == CLOSED and items["update_order"]["failures"] == 1
    assert items["update_order"]["circuit_breaker"] == BREAKER and items["update_order"]["max_concurrent"] == 5
    assert items["verify_phone"]["circuit_breaker"] is None and items["verify_phone"]["recent_seconds"] == 3600


def test_open_and_close_by_hand_are_recorded_and_obeyed(tools):
    operator = staff("op", "agents.operate_breakers")
    opened = operator.post(
        "/api/v1/tools/update_order/breaker", {"action": "open", "reason": "upstream down"}, format="json"
    )
    assert opened.status_code == 200, opened.content
    body = opened.json()
    assert (body["breaker"]["state"], body["breaker"]["forced"], body["breaker"]["retry_after_ms"]) == (
        OPEN,
        True,
        None,
    )
    assert body["change"]["actor"] == "operator:op" and body["change"]["reason"] == "upstream down"
    with pytest.raises(CircuitOpen) as refused:
        gate_enter("update_order", breaker=BREAKER, max_concurrent=5, lease="1:1", deadline_ms=wall_deadline(5))
    assert refused.value.code == "circuit_open" and refused.value.extra["retry_after_ms"] >= 1
    closed = operator.post("/api/v1/tools/update_order/breaker", {"action": "close", "reason": "back"}, format="json")
    assert closed.json()["breaker"]["state"] == CLOSED
    assert gate_enter("update_order", breaker=BREAKER, max_concurrent=5, lease="1:1", deadline_ms=wall_deadline(5))
    history = list(BreakerChange.objects.order_by("created_at").values_list("action", "user__username", "reason"))
    assert history == [("open", "op", "upstream down"), ("close", "op", "back")]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "open", "reason": "   "}, "reason"),
        ({"action": "open"}, "reason"),
        ({"action": "shut", "reason": "why"}, "action"),
        ({"action": 1, "reason": "why"}, "action"),
        ({"action": "open", "reason": "why", "extra": 1}, "extra"),
    ],
)
def test_a_change_needs_a_known_action_and_a_reason(tools, body, field):
    response = staff("op", "agents.operate_breakers").post("/api/v1/tools/update_order/breaker", body, format="json")
    assert response.status_code == 422, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert field in response.json()["errors"]
    assert not BreakerChange.objects.exists()


def test_a_tool_without_a_breaker_cannot_be_opened(tools):
    response = staff("op", "agents.operate_breakers").post(
        "/api/v1/tools/verify_phone/breaker", {"action": "open", "reason": "x"}, format="json"
    )
    assert response.status_code == 422 and "no circuit breaker" in response.json()["detail"]
    assert not BreakerChange.objects.exists()


def test_an_unknown_tool_is_404(tools):
    response = staff("op", "agents.operate_breakers").post(
        "/api/v1/tools/no_such_tool/breaker", {"action": "open", "reason": "x"}, format="json"
    )
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_each_operation_needs_its_permission(tools):
    nobody = staff("nobody")
    listed = nobody.get("/api/v1/tools/breakers")
    assert listed.status_code == 403 and "agents.view_toolbreaker" in listed.json()["detail"]
    changed = nobody.post("/api/v1/tools/update_order/breaker", {"action": "open", "reason": "x"}, format="json")
    assert changed.status_code == 403 and "agents.operate_breakers" in changed.json()["detail"]
    watcher = staff("watcher", "agents.view_toolbreaker")
    assert (
        watcher.post("/api/v1/tools/update_order/breaker", {"action": "open", "reason": "x"}, format="json").status_code
        == 403
    )
    assert staff("op", "agents.operate_breakers").get("/api/v1/tools/breakers").status_code == 200
    assert not BreakerChange.objects.exists()


def test_an_agent_token_is_refused(tools):
    _, token = agent_create(name="bot", point_keys=[], actor=None, reason="test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/v1/tools/breakers").status_code == 403
    refused = api.post("/api/v1/tools/update_order/breaker", {"action": "open", "reason": "x"}, format="json")
    assert refused.status_code == 403 and refused["Content-Type"].startswith("application/problem+json")
    assert not BreakerChange.objects.exists()

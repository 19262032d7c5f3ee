"""Two server processes share each tool's breaker: a person opens it through one, the other refuses and
shows it open; closed through the other, the first shows it closed. Real HTTP to two ``bin/serve``
processes on one database (and one Redis when this run has one). And failures reported to one through the
tool-call endpoints open the breaker the other's checks meet."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from tests.support.breakers import SERVED_HEADERS, breakers_forget, shared_database, two_servers
from tests.support.tools import DEMO_WITH_TOOLS


def call(url: str, token: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=SERVED_HEADERS)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def states(base: str, token: str) -> dict[str, str]:
    status, body = call(f"{base}/api/v1/tools/breakers", token)
    assert status == 200, body
    return {item["tool"]: item["state"] for item in body["breakers"]}


def test_a_breaker_opened_through_one_server_is_open_on_the_other(transactional_db, tmp_path):
    with shared_database(tmp_path) as database:
        config_import(text=DEMO_WITH_TOOLS, source="demo with tools", actor=None, reason="demo")
        user = get_user_model().objects.create_user(username="op", password="pw-op-123", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="operate_breakers"))
        token = staff_token_create(user=user)
        with two_servers(database, tmp_path) as (one, two):
            assert states(two, token)["update_order"] == "closed"
            status, body = call(
                f"{one}/api/v1/tools/update_order/breaker", token, "POST", {"action": "open", "reason": "outage"}
            )
            assert status == 200 and body["breaker"]["state"] == "open", body
            assert states(two, token)["update_order"] == "open"
            status, body = call(
                f"{two}/api/v1/tools/update_order/breaker", token, "POST", {"action": "close", "reason": "back"}
            )
            assert status == 200 and body["breaker"]["state"] == "closed", body
            assert states(one, token)["update_order"] == "closed"


SHARED_TOOL_DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: lookups
    states: [asking, human_handoff, done]
    initial: asking
    handoff: human_handoff
    terminal: [done]
    transitions:
      asking: [done, human_handoff]
      human_handoff: [done]
    actions:
      asking: [lookup_stock]
tools:
  - name: lookup_stock
    input_schema: {type: object, properties: {sku: {type: string}}, required: [sku]}
    error_codes:
      - {code: UNAVAILABLE, retryable: false}
    on_exhausted: {state: done}
    risk: read_only
    circuit_breaker: {failure_threshold: 2, window_s: 60, half_open_after_ms: 60000, trial_calls: 1}
"""


def test_failures_reported_through_one_server_open_the_breaker_the_other_checks_against(transactional_db, tmp_path):
    # The promise: one breaker per tool for every worker and agent instance. Two failed attempts
    # reported to server one reach the threshold; server two then refuses the next call fast.
    from agents.runtimes.services import agent_create

    breakers_forget("lookup_stock")
    with shared_database(tmp_path) as database:
        config_import(text=SHARED_TOOL_DOCUMENT, source="test", actor=None, reason="two servers")
        _, token = agent_create(name="stock_bot", point_keys=[], actor=None, reason="two servers")
        try:
            with two_servers(database, tmp_path) as (one, two):
                for key in ("s1", "s2"):
                    status, body = call(
                        f"{one}/api/v1/sessions", token, "POST", {"machine": "lookups", "session_id": key}
                    )
                    assert status == 201, body
                    check = {"tool": "lookup_stock", "input": {"sku": "A1"}, "expected_state": "asking"}
                    status, body = call(f"{one}/api/v1/sessions/{key}/tool-calls", token, "POST", check)
                    assert status == 201, body
                    failed = {"error": {"code": "UNAVAILABLE", "message": "down"}, "duration_ms": 3}
                    status, body = call(f"{one}/api/v1/tool-calls/{body['operation_id']}/result", token, "POST", failed)
                    assert status == 200 and body["next"] == "give_up", body
                status, body = call(f"{two}/api/v1/sessions", token, "POST", {"machine": "lookups", "session_id": "s3"})
                assert status == 201, body
                check = {"tool": "lookup_stock", "input": {"sku": "A1"}, "expected_state": "asking"}
                status, body = call(f"{two}/api/v1/sessions/s3/tool-calls", token, "POST", check)
                assert (status, body["code"]) == (503, "circuit_open"), body
                assert 0 < body["retry_after_ms"] <= 60000
        finally:
            breakers_forget("lookup_stock")

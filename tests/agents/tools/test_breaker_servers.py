"""Two server processes share each tool's breaker: a person opens it through one, the other refuses and
shows it open; closed through the other, the first shows it closed. Real HTTP to two ``bin/serve``
processes on one database (and one Redis when this run has one). The tool-call endpoints will be tested
the same way (``tests.support.breakers.two_servers``)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from tests.support.breakers import SERVED_HEADERS, shared_database, two_servers
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

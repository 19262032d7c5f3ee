"""The request log line and its formats, in one process (over real HTTP with gunicorn: test_metrics_served.py)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from decision_service.env import BASE_DIR
from decision_service.request_log import JsonFormatter, PlainFormatter
from tests.support import agent_api

pytestmark = pytest.mark.django_db

SECRET_TEXT = "我的手机号 13800138000 要退款"
SECRET_AMOUNT = 123456.75


def _request_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "arbiter.request"]


def test_a_decision_is_logged_with_its_ids_and_nothing_the_client_wrote(demo, caplog):
    api = agent_api("log_bot")
    body = {"point": "refund_approval", "input": SECRET_TEXT, "facts": {"refund_amount": SECRET_AMOUNT}}
    with caplog.at_level(logging.INFO, logger="arbiter.request"):
        response = api.post("/api/v1/decisions?phone=13800138000", body, format="json", HTTP_X_REQUEST_ID="abc-123")
    assert response.status_code == 201
    assert response["X-Request-ID"] == "abc-123"
    [record] = _request_lines(caplog)
    line = json.loads(JsonFormatter().format(record))
    assert {k: line[k] for k in ("request_id", "method", "path", "route", "status", "agent", "point")} == {
        "request_id": "abc-123",
        "method": "POST",
        "path": "/api/v1/decisions",
        "route": "decision-create",
        "status": 201,
        "agent": "log_bot",
        "point": "refund_approval",
    }
    assert line["decision_id"] == response.json()["id"]
    assert line["duration_ms"] >= 0 and line["logger"] == "arbiter.request" and line["level"] == "INFO"
    text = JsonFormatter().format(record) + PlainFormatter("%(message)s").format(record)
    for secret in ("13800138000", "手机号", str(SECRET_AMOUNT), "Bearer"):
        assert secret not in text


def test_a_refused_decision_names_its_point_but_no_decision(demo, caplog):
    api = agent_api("narrow_bot", points=["intent_routing"])
    with caplog.at_level(logging.INFO, logger="arbiter.request"):
        response = api.post("/api/v1/decisions", {"point": "refund_approval", "facts": {}}, format="json")
    assert response.status_code == 403
    line = json.loads(JsonFormatter().format(_request_lines(caplog)[0]))
    assert (line["status"], line["point"], line["decision_id"], line["agent"]) == (
        403,
        "refund_approval",
        None,
        "narrow_bot",
    )


@pytest.mark.parametrize("given", ["", "has space", "x" * 129, "semi;colon", "ünï"])
def test_an_unusable_request_id_is_replaced_by_a_new_one(client, caplog, given):
    with caplog.at_level(logging.INFO, logger="arbiter.request"):
        response = client.get("/healthz", HTTP_X_REQUEST_ID=given)
    assert response["X-Request-ID"] != given and len(response["X-Request-ID"]) == 36
    assert _request_lines(caplog)[0].request["request_id"] == response["X-Request-ID"]


def test_unmatched_paths_and_admin_pages_are_logged_without_a_user(client, admin_client, caplog):
    with caplog.at_level(logging.INFO, logger="arbiter.request"):
        client.get("/no/such/page")
        admin_client.get("/admin/")
    first, second = (r.request for r in _request_lines(caplog))
    assert (first["route"], first["status"], first["agent"]) == ("unmatched", 404, None)
    assert (second["route"], second["status"], second["agent"]) == ("index", 200, None)


def test_other_log_lines_carry_the_request_id_while_it_is_served():
    from decision_service import request_log

    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "something %s", ("odd",), None)
    token = request_log._current.set({"request_id": "r-1", "point": None, "decision_id": None})
    try:
        line = json.loads(JsonFormatter().format(record))
    finally:
        request_log._current.reset(token)
    assert line["request_id"] == "r-1" and line["message"] == "something odd" and line["level"] == "WARNING"
    assert "request_id" not in json.loads(JsonFormatter().format(record))


@pytest.mark.parametrize(
    ("module", "switch", "expected"),
    [
        ("local", None, "plain"),
        ("local", "json", "json"),
        ("production", None, "json"),
        ("production", "plain", "plain"),
    ],
)
def test_production_logs_json_and_development_plain_unless_told(module, switch, expected):
    env = {k: v for k, v in os.environ.items() if k not in {"ARBITER_LOG_FORMAT", "DJANGO_SETTINGS_MODULE"}}
    env.update({"SECRET_KEY": "k" * 50, "ALLOWED_HOSTS": "127.0.0.1"})
    if switch:
        env["ARBITER_LOG_FORMAT"] = switch
    code = f"import decision_service.settings.{module} as s; print(s.LOGGING['handlers']['console']['formatter'])"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=BASE_DIR, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected

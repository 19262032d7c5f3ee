"""GET /api/v1/config: the live configuration document over the staff API, as YAML or JSON."""

from __future__ import annotations

import pytest
import yaml
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.selectors import config_document
from rules.config.yaml_export import config_export
from rules.governance.tokens import staff_token_create
from tests.support import make_user

pytestmark = pytest.mark.django_db


def client_of(token: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


@pytest.fixture
def staff(demo) -> APIClient:
    return client_of(staff_token_create(user=make_user("reader", "risk_approvers")))


def test_yaml_by_default_is_what_export_config_prints(staff):
    answer = staff.get("/api/v1/config")
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/yaml; charset=utf-8"
    assert answer.content.decode("utf-8") == config_export()
    assert yaml.safe_load(answer.content) == config_document()


@pytest.mark.parametrize(("query", "accept"), [("", "application/json"), ("?format=json", "*/*")])
def test_json_when_asked_for(staff, query, accept):
    answer = staff.get("/api/v1/config" + query, HTTP_ACCEPT=accept)
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/json"
    assert answer.json() == config_document()


def test_format_yaml_wins_over_accept_json(staff):
    answer = staff.get("/api/v1/config?format=yaml", HTTP_ACCEPT="application/json")
    assert answer["Content-Type"].startswith("application/yaml")


def test_an_unknown_format_or_parameter_is_refused(staff):
    for query, field in (("?format=xml", "format"), ("?formt=json", "formt")):
        answer = staff.get("/api/v1/config" + query)
        assert answer.status_code == 422
        assert answer["Content-Type"] == "application/problem+json"
        assert (answer.json()["code"], list(answer.json()["errors"])) == ("invalid_request", [field])


def test_an_agent_token_and_no_token_are_refused(demo, actor):
    _, token = agent_create(name="bot", point_keys=[], actor=actor, reason="test")
    assert client_of(token).get("/api/v1/config").json()["code"] == "permission_denied"
    assert APIClient().get("/api/v1/config").status_code == 401


def test_a_staff_user_without_the_configuration_view_permissions_is_refused(demo):
    answer = client_of(staff_token_create(user=make_user("queue", "queue_operators"))).get("/api/v1/config")
    assert answer.status_code == 403
    assert answer.json()["code"] == "permission_denied"
    assert "rules.view_" in answer.json()["detail"]

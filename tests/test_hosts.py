"""A ``Host`` outside ``ALLOWED_HOSTS``: the probes answer anyway (a kubelet or Prometheus addresses the
process by its IP), the API refuses with a problem, the admin with Django's plain 400 — and the log has
one warning line, never a ``DisallowedHost`` traceback."""

from __future__ import annotations

import logging

import pytest
from django.test import Client, override_settings

PRODUCTION_HOSTS = override_settings(ALLOWED_HOSTS=["arbiter.example.com"])
POD = "127.0.0.1:8001"


@pytest.fixture
def client_() -> Client:
    return Client(REMOTE_ADDR="127.0.0.1")


def _tracebacks(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.exc_info or (r.name == "django.security.DisallowedHost" and r.levelno >= logging.ERROR)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("probe", ["/healthz", "/readyz", "/metrics"])
def test_probes_answer_whatever_the_host(client_, probe, caplog):
    with PRODUCTION_HOSTS:
        response = client_.get(probe, HTTP_HOST=POD)
    assert response.status_code == 200, response.content
    assert _tracebacks(caplog) == []


@pytest.mark.django_db
def test_metrics_keep_their_address_check_whatever_the_host():
    with PRODUCTION_HOSTS:
        response = Client(REMOTE_ADDR="203.0.113.9").get("/metrics", HTTP_HOST=POD)
    assert response.status_code == 403
    assert response.json()["code"] == "metrics_forbidden"


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [("get", "/api/v1/points"), ("post", "/api/v1/decisions")])
def test_the_api_refuses_another_host_with_a_problem_and_one_warning(client_, method, path, caplog):
    caplog.set_level(logging.INFO)
    with PRODUCTION_HOSTS:
        response = getattr(client_, method)(path, HTTP_HOST="evil.example.net")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "disallowed_host"
    assert _tracebacks(caplog) == []
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "ALLOWED_HOSTS" in r.getMessage()]
    assert len(warnings) == 1 and "evil.example.net" in warnings[0].getMessage()


@pytest.mark.django_db
def test_the_admin_refuses_another_host_with_a_plain_400(client_, caplog):
    with PRODUCTION_HOSTS:
        response = client_.get("/admin/login/", HTTP_HOST="evil.example.net")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert _tracebacks(caplog) == []


@pytest.mark.django_db
def test_an_allowed_host_is_served_as_before(client_):
    with PRODUCTION_HOSTS:
        assert client_.get("/admin/login/", HTTP_HOST="arbiter.example.com").status_code == 200
        assert client_.get("/api/v1/points", HTTP_HOST="arbiter.example.com").json()["code"] == "not_authenticated"

"""``/healthz`` and ``/readyz``: the database, the broker when one is configured, the current revision."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.models import ConfigRevision

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "after_sales.yaml"


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.mark.django_db
def test_ready_with_no_configuration_yet(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["checks"]["database"] == "reachable"
    assert body["checks"]["revision"] == "no configuration yet (empty)"
    assert body["checks"]["broker"] in ("reachable", "none configured (tasks run in-process)")


@pytest.mark.django_db
def test_ready_names_the_compiled_revision(client, actor):
    config_import(text=DEMO.read_text("utf-8"), source="demo", actor=actor, reason="demo")
    assert client.get("/readyz").json()["checks"]["revision"] == "revision 1 compiled"


@pytest.mark.django_db
def test_a_revision_that_does_not_compile_is_503(client):
    broken = {
        "version": 1,
        "thresholds": [],
        "keyword_lists": [],
        "points": [
            {
                "key": "p",
                "outcomes": ["a"],
                "candidate_whitelist": [],
                "default_outcome": "a",
                "when_no_candidate": "default",
                "rules": [
                    {
                        "key": "r",
                        "priority": 1,
                        "category": "risk",
                        "match": "all",
                        "mode": "enforce",
                        "outcome": "a",
                        "conditions": [{"candidate_confidence_below": "missing"}],
                    }
                ],
            }
        ],
        "machines": [],
    }
    ConfigRevision.objects.create(number=1, snapshot=broken, digest="0" * 64, reason="written around the services")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert (body["code"], body["status"]) == ("not_ready", 503)
    assert list(body["errors"]) == ["revision"]
    assert body["errors"]["revision"][0].startswith("the current revision does not compile")


@pytest.mark.django_db
def test_an_unreachable_broker_is_503(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/10"  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["errors"] == {"broker": ["the Celery broker cannot be reached"]}


def test_only_get_and_head(client):
    response = client.post("/readyz")
    assert (response.status_code, response.json()["code"], response["Allow"]) == (
        405,
        "method_not_allowed",
        "GET, HEAD",
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], json.loads(error.read())


def test_a_server_whose_database_is_unreachable_is_alive_but_not_ready():
    """A real server process (WSGI) whose DATABASE_URL points at a port nothing listens on."""
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "decision_service.settings.test",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere",
    }
    env.pop("CELERY_BROKER_URL", None)
    code = (
        "from wsgiref.simple_server import make_server\n"
        "from decision_service.wsgi import application\n"
        f"make_server('127.0.0.1', {port}, application).serve_forever()\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None, "the server exited"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        status, content_type, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert (status, content_type, body["code"]) == (503, "application/problem+json", "not_ready")
        assert body["errors"] == {
            "database": ["the database cannot be reached"],
            "revision": ["the current revision cannot be read"],
        }
    finally:
        server.terminate()
        server.wait(timeout=10)

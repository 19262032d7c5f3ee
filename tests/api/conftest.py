from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from agents.services import agent_create
from rules.configio.apply import config_import
from rules.runtime import engines

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "after_sales.yaml"
SPEC = ROOT / "docs" / "openapi.yaml"


@pytest.fixture(autouse=True)
def _fresh_engines():
    # Each test database starts again at revision 1: never let one test see another's engine.
    engines.clear()
    yield
    engines.clear()


def _load_demo() -> None:
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="api test demo")


def _token() -> str:
    _, token = agent_create(
        name="api_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="api test"
    )
    return token


@pytest.fixture
def live_demo(live_server, transactional_db):
    """The real HTTP server (another thread of this process) with the after-sales demo loaded."""
    _load_demo()
    return live_server


@pytest.fixture
def live_token(live_demo) -> str:
    return _token()


@pytest.fixture
def agent_client(db) -> APIClient:
    """Django's test client (no server) with the demo loaded and an agent token."""
    _load_demo()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {_token()}")
    client.raise_request_exception = False  # a server error is an answer to check, not a test crash
    return client

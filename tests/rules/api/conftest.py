from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from agents.services import agent_create
from rules.configio.apply import config_import
from rules.runtime import engines

DEMO = Path(__file__).resolve().parents[3] / "demo" / "after_sales.yaml"


@pytest.fixture(autouse=True)
def _fresh_engines():
    # Each test database starts again at revision 1: never let one test see another's engine.
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def demo(db):
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="test demo")


@pytest.fixture
def agent_token(demo):
    _, token = agent_create(
        name="support_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t"
    )
    return token


@pytest.fixture
def client(agent_token):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    return c


@pytest.fixture
def other_client(demo):
    _, token = agent_create(name="other_bot", point_keys=["refund_approval"], actor=None, reason="t")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def decide(client, body, **headers):
    return client.post("/api/v1/decisions", body, format="json", **headers)

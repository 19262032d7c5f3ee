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
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def demo(db):
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="test demo")


@pytest.fixture
def client(demo):
    _, token = agent_create(
        name="support_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t"
    )
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def post(client, path, body, **headers):
    return client.post(path, body, format="json", **headers)

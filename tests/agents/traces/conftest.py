from __future__ import annotations

import pytest

from tests.support import agent_api


@pytest.fixture
def client(demo):
    return agent_api("trace_bot", points=["intent_routing", "refund_approval"])


@pytest.fixture
def session(client):
    answer = client.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "t1"}, format="json")
    assert answer.status_code == 201, answer.json()
    return "t1"


@pytest.fixture
def keep_all(settings):
    settings.ARBITER_TRACE_SAMPLE_RATIO = 1.0

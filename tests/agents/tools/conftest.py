from __future__ import annotations

import pytest

from rules.config.yaml_import import config_import
from tests.support import agent_api
from tests.support.tool_calls import TOOLS_DOCUMENT


@pytest.fixture
def tooling(db):
    config_import(text=TOOLS_DOCUMENT, source="test", actor=None, reason="tool-call tests")


@pytest.fixture
def client(tooling):
    return agent_api("tool_bot", points=[])


@pytest.fixture
def session(client):
    answer = client.post("/api/v1/sessions", {"machine": "tooling", "session_id": "s1"}, format="json")
    assert answer.status_code == 201, answer.json()
    return "s1"

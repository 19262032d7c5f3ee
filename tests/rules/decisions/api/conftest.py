from __future__ import annotations

import pytest

from tests.support import agent_api


@pytest.fixture
def client(demo):
    return agent_api()


@pytest.fixture
def other_client(demo):
    return agent_api("other_bot", ["refund_approval"])

from __future__ import annotations

import pytest

from tests.support import agent_api


@pytest.fixture
def client(demo):
    return agent_api()


def post(client, path, body, **headers):
    return client.post(path, body, format="json", **headers)

"""A live Arbiter (pytest-django's ``live_server``: the project's WSGI app in a thread, over real HTTP)
with the after-sales demo, an agent and three staff members, and clients of ``arbiter_client`` on it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from arbiter_client import Arbiter, RetryPolicy
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from tests.support import DEMO_POINTS, DEMO_TEXT, groups_ensure

# Retries stay on (a test about them says so); waits are short so a 503 does not hold a test up.
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)


@dataclass
class Live:
    url: str
    clients: list[Arbiter]

    def agent(self, name: str = "support_bot", points: tuple[str, ...] = DEMO_POINTS, **options: Any) -> Arbiter:
        """A new agent and a client holding its token (``options``: rate limit, retry policy …)."""
        rate = {k: options.pop(k) for k in ("rate_per_minute", "rate_burst") if k in options}
        _, token = agent_create(name=name, point_keys=list(points), actor=None, reason="client test", **rate)
        return self.client(token, **options)

    def staff(self, username: str, *groups: str, superuser: bool = False) -> Arbiter:
        user = get_user_model().objects.create_user(
            username=username, password=f"{username}-pw-123", is_staff=True, is_superuser=superuser
        )
        for group in groups:
            user.groups.add(Group.objects.get(name=group))
        return self.client(staff_token_create(user=user))

    def client(self, token: str, **options: Any) -> Arbiter:
        options.setdefault("retry", FAST)
        client = Arbiter(self.url, token, **options)
        self.clients.append(client)
        return client


@pytest.fixture
def live_config() -> str:
    """The configuration the live server starts with (the demo); a module may override it."""
    return DEMO_TEXT


@pytest.fixture
def live(live_server: Any, transactional_db: Any, live_config: str) -> Iterator[Live]:
    groups_ensure()
    # The first configuration of the installation: it applies at once, as load_demo's does.
    config_import(text=live_config, source="tests/client", actor=None, reason="client test")
    server = Live(live_server.url, [])
    yield server
    for client in server.clients:
        client.close()


@pytest.fixture
def bot(live: Live) -> Arbiter:
    return live.agent()

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rules.config.mcp_servers import mcp_server_save
from rules.config.yaml_import import config_import
from tests.support import agent_token, approved
from tests.support.breakers import breakers_forget, served, shared_database
from tests.support.mcp_gateway import gateway_document, rest
from tests.support.mcp_upstream import McpUpstream, mcp_upstream

TOOLS = ("orders.verify_phone", "orders.query_order", "orders.update_order")


@pytest.fixture(scope="module")
def upstream() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


@dataclass
class Gateway:
    urls: list[str]
    token: str
    upstream: McpUpstream

    @property
    def url(self) -> str:
        return self.urls[0]

    def session(self, key: str, *, at: str | None = None) -> str:
        """A new session of the agent's (``orders_flow``), moved to ``at`` when given."""
        created = {"machine": "orders_flow", "session_id": key}
        status, body = rest(self.url, self.token, "POST", "/api/v1/sessions", created)
        assert status == 201, body
        if at is not None:
            move = {"to": at, "expected_state": "identify"}
            status, body = rest(self.url, self.token, "POST", f"/api/v1/sessions/{key}/transitions", move)
            assert status == 200, body
        return key


def _gateway(tmp_path: Path, upstream: McpUpstream, count: int, **env: str) -> Iterator[Gateway]:
    upstream.reset()
    breakers_forget(*TOOLS)
    with shared_database(tmp_path) as database:
        config_import(text=gateway_document(), source="mcp gateway test", actor=None, reason="mcp gateway")
        # A server with a write tool is high-risk: a second person approves it, as in production.
        approved(
            lambda: mcp_server_save(user=None, reason="mcp gateway", name="orders", url=upstream.url, tools_refresh_s=1)
        )
        token = agent_token("mcp_bot", points=[])
        try:
            with served(database, tmp_path, count, **env) as urls:
                yield Gateway(urls=urls, token=token, upstream=upstream)
        finally:
            breakers_forget(*TOOLS)


@pytest.fixture
def gateway(transactional_db, tmp_path, upstream) -> Iterator[Gateway]:
    """One Arbiter (``bin/serve``) whose gateway fronts the demo upstream as the server ``orders``."""
    yield from _gateway(tmp_path, upstream, 1)


@pytest.fixture
def two_gateways(transactional_db, tmp_path, upstream) -> Iterator[Gateway]:
    """Two Arbiter processes on one database (and one Redis when this run has one)."""
    yield from _gateway(tmp_path, upstream, 2)


@pytest.fixture
def patient_gateway(transactional_db, tmp_path, upstream) -> Iterator[Gateway]:
    """One Arbiter whose gateway waits up to 60 s for a person's approval before it answers."""
    yield from _gateway(tmp_path, upstream, 1, ARBITER_MCP_APPROVAL_WAIT_S="60")

"""Four-eyes on upstream MCP servers: redirecting (URL, authentication), enabling or deleting a server
with a write or destructive tool waits for a second person in every path (service, admin, import, staff
API); everything else applies at once."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from rules.config.document.diff import config_diff
from rules.config.document.validate import config_from_yaml
from rules.config.mcp_servers import mcp_server_delete, mcp_server_save
from rules.config.yaml_import import config_import
from rules.errors import ApprovalRequired
from rules.governance.risk import change_risks
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision, McpServer
from tests.support import approved, make_user
from tests.support.admin import form_data
from tests.support.mcp_servers import DEMO_WITH_SERVERS, NAMESPACED_TOOLS, SERVERS_YAML, with_servers

ORDERS_URL = "url: https://orders.internal.example/mcp"
ORDERS_AUTH = "auth: {kind: bearer, secret_env: ORDERS_MCP_TOKEN}"
WRITER = "orders.update_order"
KB_ONLY = "  - name: kb\n    url: http://127.0.0.1:9/mcp\n    tools_refresh_s: 300\n"


@pytest.fixture
def served(db):
    """The demo with its servers and namespaced tools as revision 1 (the first configuration applies at once)."""
    result = config_import(text=DEMO_WITH_SERVERS, source="servers.yaml", actor=None, reason="servers")
    assert result.revision == 1
    return result


@pytest.fixture
def editor(db):
    return make_user("editor", "config_editors")


def _risks(before: str, after: str) -> list[tuple[str, str]]:
    old, new = config_from_yaml(before), config_from_yaml(after)
    return [(r.record, r.why) for r in change_risks(old, new, config_diff(old, new))]


def _edit(old: str, new: str, text: str = DEMO_WITH_SERVERS) -> str:
    assert old in text
    return text.replace(old, new)


def test_redirecting_a_server_with_a_write_tool_is_high_risk():
    moved = _edit(ORDERS_URL, "url: https://elsewhere.example/mcp")
    assert _risks(DEMO_WITH_SERVERS, moved) == [
        ("MCP server orders", f"changes url of an MCP server with the write or destructive tools {WRITER}")
    ]
    other_secret = _edit(ORDERS_AUTH, "auth: {kind: header, header: X-Api-Key, secret_env: ORDERS_KEY}")
    assert _risks(DEMO_WITH_SERVERS, other_secret) == [
        ("MCP server orders", f"changes auth of an MCP server with the write or destructive tools {WRITER}")
    ]
    without_orders = with_servers(servers=SERVERS_YAML[: SERVERS_YAML.index("  - name: orders")] + KB_ONLY)
    assert _risks(DEMO_WITH_SERVERS, without_orders) == [
        ("MCP server orders", f"deletes an MCP server with the write or destructive tools {WRITER}")
    ]


def test_enabling_is_high_risk_and_disabling_applies_at_once():
    disabled = _edit(ORDERS_AUTH, ORDERS_AUTH + "\n    enabled: false")
    assert _risks(DEMO_WITH_SERVERS, disabled) == []
    assert _risks(disabled, DEMO_WITH_SERVERS) == [
        ("MCP server orders", f"enables an MCP server with the write or destructive tools {WRITER}")
    ]


def test_timings_descriptions_and_new_servers_apply_at_once():
    servers = SERVERS_YAML.replace("timeout_ms: 5000\n", "timeout_ms: 9000\n    tools_refresh_s: 10\n")
    calmer = with_servers(servers=servers.replace("The order service's", "The orders'"))
    assert _risks(DEMO_WITH_SERVERS, calmer) == []
    head = DEMO_WITH_SERVERS.split("\nmcp_servers:\n")[0] + "\n"
    assert _risks(head, DEMO_WITH_SERVERS) == []  # new servers


def test_a_server_whose_tools_only_read_changes_at_once():
    moved = _edit("url: http://127.0.0.1:9/mcp", "url: http://127.0.0.1:10/mcp")
    assert _risks(DEMO_WITH_SERVERS, moved) == []
    # A plain tool named like the server is no tool of it: only ``server.`` names are.
    read_only = with_servers(tools=NAMESPACED_TOOLS.replace("    risk: write\n", "    risk: read_only\n"))
    assert _risks(read_only, _edit(ORDERS_URL, "url: https://elsewhere.example/mcp", read_only)) == []


def test_both_sides_are_judged():
    # Moving the server and lowering its write tool to read-only in one change: the tool wrote before.
    read_only = with_servers(tools=NAMESPACED_TOOLS.replace("    risk: write\n", "    risk: read_only\n"))
    moved = _edit(ORDERS_URL, "url: https://elsewhere.example/mcp", read_only)
    reasons = dict(_risks(DEMO_WITH_SERVERS, moved))
    assert reasons["MCP server orders"].startswith("changes url of an MCP server")
    # And making one of its tools write while moving it: the tool writes after.
    assert dict(_risks(read_only, _edit(ORDERS_URL, "url: https://elsewhere.example/mcp")))["MCP server orders"]


def test_the_service_holds_a_redirect_until_a_second_person_approves(served, editor):
    with pytest.raises(ApprovalRequired) as held:
        mcp_server_save(user=editor, reason="new host", name="orders", url="https://new.example/mcp")
    assert [r["why"] for r in held.value.change_request.risks] == [
        f"changes url of an MCP server with the write or destructive tools {WRITER}"
    ]
    assert McpServer.objects.get(name="orders").url == "https://orders.internal.example/mcp"
    assert ConfigRevision.objects.count() == 1

    def again():
        raise held.value

    approved(again)
    assert McpServer.objects.get(name="orders").url == "https://new.example/mcp"
    # A timeout applies at once; a deletion waits.
    mcp_server_save(user=editor, reason="slower", name="orders", timeout_ms=20_000)
    assert McpServer.objects.get(name="orders").timeout_ms == 20_000
    with pytest.raises(ApprovalRequired):
        mcp_server_delete(user=editor, reason="gone", name="orders")
    assert McpServer.objects.filter(name="orders").exists()


def test_the_admin_form_sends_a_redirect_to_a_change_request(served, editor, client):
    client.force_login(editor)
    server = McpServer.objects.get(name="orders")
    url = reverse("admin:rules_mcpserver_change", args=[server.pk])
    page = client.get(url)
    assert f"Has the write or destructive tools {WRITER}" in page.content.decode()
    data = form_data(page)
    data.update(url="https://elsewhere.example/mcp", change_reason="move")
    response = client.post(url, data, follow=True)
    request = ChangeRequest.objects.get()
    assert response.redirect_chain[-1][0] == reverse("admin:rules_changerequest_change", args=[request.pk])
    assert McpServer.objects.get(name="orders").url == "https://orders.internal.example/mcp"


def test_the_staff_api_holds_a_redirect_and_applies_a_timeout(served, editor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    calmer = "version: 1\nmcp_servers:\n  - name: orders\n    timeout_ms: 7000\n"
    applied = api.post("/api/v1/change-requests", {"reason": "t", "config": calmer, "partial": True}, format="json")
    assert (applied.status_code, applied.json()["state"]) == (201, "applied"), applied.content
    assert McpServer.objects.get(name="orders").timeout_ms == 7000
    moved = "version: 1\nmcp_servers:\n  - name: orders\n    url: https://elsewhere.example/mcp\n"
    held = api.post("/api/v1/change-requests", {"reason": "m", "config": moved, "partial": True}, format="json")
    body = held.json()
    assert (held.status_code, body["state"], body["risk"]) == (201, "pending", "high"), held.content
    assert any(d["record"] == "MCP server orders" and d["field"] == "url" for d in body["diff"])
    gone = "version: 1\ndelete:\n  mcp_servers: [orders]\n"
    held = api.post("/api/v1/change-requests", {"reason": "d", "config": gone, "partial": True}, format="json")
    assert (held.status_code, held.json()["state"]) == (201, "pending"), held.content
    assert McpServer.objects.get(name="orders").url == "https://orders.internal.example/mcp"

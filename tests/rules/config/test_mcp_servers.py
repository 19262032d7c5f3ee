"""Upstream MCP servers as audited configuration: the ``mcp_servers:`` section (its checks, with lines),
import and export, history, revisions, the staff API's document, the admin, and what the gateway reads:
``mcp_servers_live`` (auth headers from the environment) and ``mcp_tools_seen`` (which upstream tools the
approved contracts do not cover)."""

from __future__ import annotations

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from rules.config.document.validate import config_check, config_from_yaml
from rules.config.mcp_servers import mcp_server_save, mcp_servers_live, mcp_tools_seen
from rules.config.runtime import engines
from rules.config.selectors import config_document, revision_latest
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from rules.models import McpServer
from tests.support import make_user
from tests.support.admin import form_data
from tests.support.mcp_servers import DEMO_WITH_SERVERS, ORDERS_TOOLS, SERVERS_YAML, with_servers
from tests.support.tools import DEMO_WITH_TOOLS

pytestmark = pytest.mark.django_db


def _load(text: str, actor=None):
    return config_import(text=text, source="servers.yaml", actor=actor, reason="test servers")


def _problems(servers: str) -> list[str]:
    document, problems = config_check(with_servers(servers=servers))
    assert document is None
    return problems


def test_export_import_export_keeps_the_servers_byte_for_byte(actor):
    _load(DEMO_WITH_SERVERS, actor)
    first = config_export()
    assert "mcp_servers:\n  - name: kb\n    url: http://127.0.0.1:9/mcp\n    auth:\n      kind: none\n" in first
    assert config_from_yaml(first) == config_document()
    assert _load(first, actor).changed is False and config_export() == first
    orders = McpServer.objects.get(name="orders")
    assert (orders.auth_kind, orders.auth_secret_env, orders.timeout_ms) == ("bearer", "ORDERS_MCP_TOKEN", 5000)
    assert orders.history.get().history_user == actor
    snapshot = revision_latest().snapshot
    assert [s["name"] for s in snapshot["mcp_servers"]] == ["kb", "orders"]
    assert snapshot["mcp_servers"][0] == {
        "name": "kb",
        "url": "http://127.0.0.1:9/mcp",
        "auth": {"kind": "none"},
        "timeout_ms": 10_000,
        "enabled": True,
        "tools_refresh_s": 300,
    }


def test_a_configuration_without_servers_keeps_its_document(actor):
    _load(DEMO_WITH_TOOLS, actor)
    assert "mcp_servers" not in config_document() and "mcp_servers:" not in config_export()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("name: kb", "name: Kb.x"), "mcp_servers[1].name: a server's name is a lower-case letter"),
        (("http://127.0.0.1:9/mcp", "ftp://127.0.0.1/mcp"), "mcp_servers[1].url: the URL is an http or https"),
        (("http://127.0.0.1:9/mcp", "https://u:pw@h.example/mcp"), "mcp_servers[1].url: a URL cannot carry a user"),
        (
            ("http://127.0.0.1:9/mcp", "https://h.example/mcp?key=s3cret"),
            "mcp_servers[1].url: a URL cannot carry a query",
        ),
        (("ORDERS_MCP_TOKEN", "sk-live-51HXq2"), "mcp_servers[0].auth.secret_env: secret_env names an environment"),
        (
            ("secret_env: ORDERS_MCP_TOKEN", "secret_env: ORDERS_MCP_TOKEN, token: abc"),
            "mcp_servers[0].auth.token: unknown key 'token'",
        ),
        (("kind: bearer,", "kind: header,"), "mcp_servers[0].auth.header: auth of kind header needs a header name"),
        (("kind: bearer,", "kind: header, header: Mcp-Session-Id,"), "the MCP transport sets Mcp-Session-Id itself"),
        (("kind: bearer,", "kind: bearer, header: X-Key,"), "mcp_servers[0].auth.header: auth of kind bearer sends"),
        (("kind: bearer, secret_env: ORDERS_MCP_TOKEN", "kind: none, secret_env: X"), "auth of kind none takes no"),
        (("timeout_ms: 5000", "timeout_ms: 0"), "mcp_servers[0].timeout_ms: timeout_ms is a whole number of ms"),
        (("tools_refresh_s: 300", "tools_refresh_s: 0"), "mcp_servers[1].tools_refresh_s: tools_refresh_s is a whole"),
        (("tools_refresh_s: 300", "tools_refresh_s: 86401"), "tools_refresh_s is a whole number of seconds from 1"),
        (("    tools_refresh_s: 300\n", "    enabled: 'yes'\n"), "mcp_servers[1].enabled: enabled is true or false"),
    ],
)
def test_the_document_refuses_a_bad_server_at_its_line(edit, expected):
    servers = SERVERS_YAML.replace(*edit)
    assert servers != SERVERS_YAML
    problems = _problems(servers)
    assert len(problems) == 1, problems
    expected = expected.replace("of ms", "of milliseconds")
    assert expected in problems[0] and problems[0].startswith("mcp_servers["), problems
    # The problem names its line in the whole document.
    lines = with_servers(servers=servers).splitlines()
    line = 1 + max(i for i, text in enumerate(lines) if edit[1].strip() in text)
    assert problems[0].endswith(f"(line {line})"), (problems, line)


def test_a_duplicate_name_is_refused_with_the_line_of_the_first():
    problems = _problems(SERVERS_YAML + "  - name: kb\n    url: http://x.example/mcp\n")
    assert len(problems) == 1 and "duplicate name 'kb': mcp_servers[1] (line" in problems[0], problems


def test_the_model_refuses_what_the_document_refuses(actor):
    _load(DEMO_WITH_SERVERS, actor)
    with pytest.raises(ValidationError) as refused:
        mcp_server_save(
            user=actor, reason="typo", name="kb", url="gopher://x", auth={"kind": "bearer", "secret_env": "x y"}
        )
    errors = refused.value.message_dict
    assert errors["url"] == ["The URL is an http or https address (with a host)."]
    assert errors["auth_secret_env"][0].startswith("secret_env names an environment variable")
    assert McpServer.objects.get(name="kb").url == "http://127.0.0.1:9/mcp"


def test_the_service_records_who_and_why_and_cuts_one_revision(actor):
    _load(DEMO_WITH_TOOLS, actor)
    before = revision_latest().number
    server = mcp_server_save(user=actor, reason="the order service", name="orders", url="https://o.example/mcp")
    assert (server.auth_kind, server.timeout_ms, server.enabled, server.tools_refresh_s) == ("none", 10_000, True, 60)
    record = server.history.get()
    assert (record.history_user, record.history_change_reason) == (actor, "the order service")
    assert revision_latest().number == before + 1
    # A save that changes nothing writes nothing.
    mcp_server_save(user=actor, reason="again", name="orders", url="https://o.example/mcp")
    assert server.history.count() == 1 and revision_latest().number == before + 1


def test_the_staff_api_document_holds_the_servers_and_never_a_secret(actor, monkeypatch):
    monkeypatch.setenv("ORDERS_MCP_TOKEN", "s3cret-token-value")
    _load(DEMO_WITH_SERVERS, actor)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=make_user('reader', 'risk_approvers'))}")
    answer = api.get("/api/v1/config?format=json")
    assert answer.status_code == 200, answer.content
    servers = {s["name"]: s for s in answer.json()["mcp_servers"]}
    assert servers["orders"]["auth"] == {"kind": "bearer", "secret_env": "ORDERS_MCP_TOKEN"}
    assert "s3cret-token-value" not in answer.content.decode()
    assert "s3cret-token-value" not in config_export()


def test_live_servers_resolve_their_secrets_from_the_environment(actor, monkeypatch):
    monkeypatch.setenv("ORDERS_MCP_TOKEN", "tok-1")
    _load(DEMO_WITH_SERVERS, actor)
    live = mcp_servers_live()
    assert set(live) == {"kb", "orders"}
    orders = live["orders"]
    assert (orders.url, orders.timeout_ms, orders.tools_refresh_s, orders.enabled) == (
        "https://orders.internal.example/mcp",
        5000,
        60,
        True,
    )
    assert dict(orders.headers) == {"Authorization": "Bearer tok-1"}
    assert dict(live["kb"].headers) == {} and live["kb"].missing_secret == ""
    assert mcp_servers_live() is live  # built once per revision
    # A header server, and a new revision seen by the next read.
    mcp_server_save(
        user=actor, reason="key", name="kb", auth={"kind": "header", "header": "X-Api-Key", "secret_env": "KB_KEY"}
    )
    monkeypatch.setenv("KB_KEY", "k-2")
    engines.clear()
    assert dict(mcp_servers_live()["kb"].headers) == {"X-Api-Key": "k-2"}


def test_a_missing_secret_lists_the_server_disabled(actor, monkeypatch, caplog):
    monkeypatch.delenv("ORDERS_MCP_TOKEN", raising=False)
    _load(DEMO_WITH_SERVERS, actor)
    orders = mcp_servers_live()["orders"]
    assert (orders.enabled, dict(orders.headers), orders.missing_secret) == (False, {}, "ORDERS_MCP_TOKEN")
    assert "ORDERS_MCP_TOKEN is not set" in caplog.text
    monkeypatch.setenv("ORDERS_MCP_TOKEN", "now-set")
    assert mcp_servers_live()["orders"].enabled is True


def _seen(tools) -> frozenset[str]:
    return mcp_tools_seen("orders", tools)


def _tool(name: str, **changes):
    tool = {**next(t for t in ORDERS_TOOLS if t["name"] == name)}
    tool.update(changes)
    return tool


def test_tools_matching_their_contracts_are_offered(actor):
    _load(DEMO_WITH_SERVERS, actor)
    assert _seen(ORDERS_TOOLS) == frozenset()
    # The description is the upstream's to change; another server's namespace is not these contracts'.
    assert _seen([_tool("query_order", description="Reads one order, fast.")]) == frozenset()
    assert mcp_tools_seen("kb", ORDERS_TOOLS) == {"query_order", "update_order"}


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        (_tool("update_order", inputSchema={"type": "object"}), "input schema changed"),
        (_tool("update_order", annotations={"destructiveHint": True}), "write became destructive"),
        (_tool("query_order", annotations={}), "read-only hint dropped: destructive by MCP's defaults"),
        (_tool("update_order", outputSchema={"type": "object"}), "output schema added"),
        ({k: v for k, v in _tool("query_order").items() if k != "outputSchema"}, "output schema removed"),
        ({"name": "cancel_order", "inputSchema": {"type": "object"}}, "new tool, no contract"),
    ],
)
def test_a_tool_that_differs_from_its_contract_is_not_offered(actor, tool, why):
    _load(DEMO_WITH_SERVERS, actor)
    others = [t for t in ORDERS_TOOLS if t["name"] != tool["name"]]
    assert _seen([*others, tool]) == {tool["name"]}, why


def test_key_order_never_counts(actor):
    _load(DEMO_WITH_SERVERS, actor)
    schema = _tool("update_order")["inputSchema"]
    reordered = {k: schema[k] for k in reversed(list(schema))}
    reordered["properties"] = {k: dict(reversed(list(v.items()))) for k, v in reversed(schema["properties"].items())}
    assert list(reordered) != list(schema)
    assert _seen([_tool("update_order", inputSchema=reordered)]) == frozenset()


@pytest.mark.applies_config_at_once(reason="about the admin form and its history, not about approval")
def test_the_admin_edits_a_server_and_shows_its_history(client, actor):
    _load(DEMO_WITH_SERVERS, actor)
    client.force_login(actor)
    server = McpServer.objects.get(name="kb")
    url = reverse("admin:rules_mcpserver_change", args=[server.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert "Its tools only read" in page.content.decode()
    data = form_data(page)
    data.update(timeout_ms="2500", change_reason="faster")
    assert client.post(url, data).status_code == 302
    server.refresh_from_db()
    assert server.timeout_ms == 2500 and server.history.latest().history_change_reason == "faster"
    data.update(auth_kind="bearer", auth_secret_env="sk-live-abc", change_reason="paste")
    assert "never the secret itself" in client.post(url, data).content.decode()
    history = client.get(reverse("admin:rules_mcpserver_history", args=[server.pk]))
    assert history.status_code == 200 and "faster" in history.content.decode()
    assert client.get(reverse("admin:rules_mcpserver_add")).status_code == 200
    assert client.get(reverse("admin:rules_mcpserver_changelist")).status_code == 200


def test_the_admin_speaks_chinese(client, actor):
    _load(DEMO_WITH_SERVERS, actor)
    client.force_login(actor)
    server = McpServer.objects.get(name="orders")
    with translation.override("zh-hans"):
        page = client.get(
            reverse("admin:rules_mcpserver_change", args=[server.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
    assert "MCP 服务器" in page and "密钥的环境变量" in page


def test_export_as_yaml_reads_back(actor):
    _load(DEMO_WITH_SERVERS, actor)
    assert yaml.safe_load(config_export())["mcp_servers"][1]["auth"]["secret_env"] == "ORDERS_MCP_TOKEN"

"""Tool contracts as audited configuration: import and export, a revision's snapshot and its compiled
contracts, the admin, and contracts read from and written as an MCP server's ``tools/list``."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils import translation

from rules.config.document.validate import config_from_yaml
from rules.config.machines import machine_save
from rules.config.runtime import engines
from rules.config.selectors import config_document, revision_latest
from rules.config.tools import mcp_tool_contract, mcp_tool_document, tool_fill, tool_save
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from rules.models import StateMachine, ToolContract
from tests.support import approved, make_user
from tests.support.admin import form_data
from tests.support.tools import DEMO_WITH_TOOLS, DEMO_WITHOUT_TOOLS

pytestmark = pytest.mark.django_db


def _load(text: str, actor=None):
    return config_import(text=text, source="tools.yaml", actor=actor, reason="test tools")


def test_export_import_export_keeps_the_contracts_byte_for_byte(actor):
    # The demo with tools as the first configuration of an installation: it applies at once.
    _load(DEMO_WITH_TOOLS, actor)
    first = config_export()
    assert "tools:\n  - name: query_order\n" in first
    assert config_from_yaml(first) == config_document()
    again = _load(first, actor)
    assert again.changed is False and config_export() == first
    tool = ToolContract.objects.get(name="update_order")
    assert (tool.risk, tool.needs_approval_in, tool.on_exhausted) == ("write", ["received"], {"state": "human_handoff"})
    assert tool.history.count() == 1 and tool.history.get().history_user == actor


def test_a_configuration_without_tools_keeps_its_document_and_digest(actor):
    _load(DEMO_WITHOUT_TOOLS, actor)
    assert "tools" not in config_document() and "tools" not in revision_latest().snapshot
    assert "tools:" not in config_export()


def test_the_revision_snapshot_holds_the_contracts_and_the_engine_compiles_them_once(actor):
    result = _load(DEMO_WITH_TOOLS, actor)
    revision = revision_latest()
    assert revision.number == result.revision
    names = [t["name"] for t in revision.snapshot["tools"]]
    assert names == ["query_order", "update_order", "verify_phone"]
    compiled = engines.for_revision(revision.number)
    assert compiled is engines.for_revision(revision.number)  # compiled once, then shared
    verify = compiled.tools["verify_phone"]
    assert verify.input_errors({"phone": "13800138000"}) == []
    # Every error, each with its JSON pointer: a number where text is wanted, an unknown field.
    update = compiled.tools["update_order"]
    errors = update.input_errors({"order_id": 42, "receiver_phone": "abc", "param_name": "does_not_exist"})
    assert sorted(e.pointer for e in errors) == ["", "/order_id", "/receiver_phone"]
    assert verify.output_errors({"verified": "yes"})[0].pointer == "/verified"
    assert update.error_codes["UPSTREAM_TIMEOUT"]["backoff"]["kind"] == "fixed"


def test_the_model_refuses_what_the_document_refuses(actor):
    _load(DEMO_WITH_TOOLS, actor)
    tool = ToolContract.objects.get(name="verify_phone")
    tool.input_schema = {"type": "object", "properties": {"phone": {"type": "strng"}}}
    tool.needs_approval_in = ["nowhere"]
    with pytest.raises(ValidationError) as refused:
        tool_save(tool=tool, actor=actor, reason="typo")
    errors = refused.value.message_dict
    assert errors["input_schema"][0].startswith("properties.phone.type: Not a valid JSON Schema")
    assert errors["needs_approval_in"] == ["[0]: Unknown state 'nowhere' (not a state of after_sales)."]


def test_a_broken_schema_never_reaches_a_revision(actor):
    # A JSON Schema the metaschema accepts but the validator cannot compile: refused before any revision.
    _load(DEMO_WITH_TOOLS, actor)
    tool = ToolContract.objects.get(name="verify_phone")
    tool.input_schema = {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^1[3-9"}}}
    with pytest.raises(ValidationError):
        tool_save(tool=tool, actor=actor, reason="bad pattern")
    assert ToolContract.objects.get(name="verify_phone").input_schema["properties"]["phone"]["pattern"] != "^1[3-9"


@pytest.mark.parametrize(
    ("annotations", "risk", "retried"),
    [
        ({}, "destructive", False),  # MCP's defaults: destructiveHint true, idempotentHint false
        ({"readOnlyHint": True}, "read_only", True),
        ({"readOnlyHint": False, "destructiveHint": False}, "write", False),
        ({"destructiveHint": False, "idempotentHint": True}, "write", True),
        ({"destructiveHint": True, "idempotentHint": True}, "destructive", True),
    ],
)
def test_mcp_annotations_give_the_risk_and_the_retry_defaults(annotations, risk, retried):
    contract = mcp_tool_contract(
        {"name": "t", "description": "d", "inputSchema": {"type": "object"}, "annotations": annotations}
    )
    assert contract["risk"] == risk
    codes = {e["code"]: e for e in contract["error_codes"]}
    assert codes["RATE_LIMIT_EXCEEDED"]["retryable"] is retried
    if retried:
        assert codes["RATE_LIMIT_EXCEEDED"]["max_retries"] == 3
        assert codes["RATE_LIMIT_EXCEEDED"]["backoff"]["kind"] == "exponential"
    back = mcp_tool_document(contract)["annotations"]
    assert (back["readOnlyHint"], back["destructiveHint"]) == (risk == "read_only", risk == "destructive")


TOOLS_LIST = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}},
                "annotations": {"readOnlyHint": True},
            },
            {"name": "delete_file", "inputSchema": {"type": "object"}},
        ]
    },
}


def test_the_command_imports_a_tools_list_and_exports_it_again(tmp_path, actor):
    _load(DEMO_WITHOUT_TOOLS, actor)
    editor = make_user("editor", "config_editors")
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS_LIST), encoding="utf-8")
    out = io.StringIO()
    call_command("mcp_tools", "import", str(path), "--user", editor.username, stdout=out)
    assert out.getvalue().strip() == "Imported 2 tool contract(s): get_weather, delete_file."
    assert dict(ToolContract.objects.values_list("name", "risk")) == {
        "get_weather": "read_only",
        "delete_file": "destructive",
    }
    assert revision_latest().snapshot["tools"][1]["output_schema"]["properties"]["temp"] == {"type": "number"}
    exported = io.StringIO()
    call_command("mcp_tools", "export", stdout=exported)
    tools = {t["name"]: t for t in json.loads(exported.getvalue())["tools"]}
    assert tools["get_weather"]["inputSchema"] == TOOLS_LIST["result"]["tools"][0]["inputSchema"]
    assert tools["delete_file"]["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
    }


@pytest.mark.applies_config_at_once(reason="about the admin form's YAML fields, not about approval")
def test_the_admin_edits_a_contract_as_yaml(client, actor):
    _load(DEMO_WITH_TOOLS, actor)
    client.force_login(actor)
    tool = ToolContract.objects.get(name="query_order")
    url = reverse("admin:rules_toolcontract_change", args=[tool.pk])
    page = client.get(url)
    assert page.status_code == 200
    data = form_data(page)
    assert "order_id:\n    type: string" in data["input_schema"]
    data.update(timeout_ms="2500", on_exhausted="state: human_handoff", change_reason="faster")
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    tool.refresh_from_db()
    assert (tool.timeout_ms, tool.on_exhausted) == (2500, {"state": "human_handoff"})
    assert tool.history.latest().history_change_reason == "faster"
    data.update(error_codes="- code: X\n  retryable: maybe\n", change_reason="broken")
    refused = client.post(url, data).content.decode()
    assert "retryable is true or false." in refused


@pytest.mark.applies_config_at_once(reason="builds the record through the service to show it in Chinese")
def test_the_admin_speaks_chinese(client, actor):
    _load(DEMO_WITH_TOOLS, actor)
    client.force_login(actor)
    tool = ToolContract.objects.get(name="query_order")
    # The override puts the test process's language back after the request switched it.
    with translation.override("zh-hans"):
        page = client.get(
            reverse("admin:rules_toolcontract_change", args=[tool.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
    assert "工具契约" in page and "输入模式" in page


def test_tool_fill_takes_a_document(actor):
    tool = tool_fill(ToolContract(), {"name": "x", "input_schema": {"type": "object"}, "risk": "read_only"})
    assert (tool.on_exhausted, tool.timeout_ms, tool.error_codes) == ("handoff", 10_000, [])


ORDERS = """\
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: orders
    states: [collecting, executing, done, handoff]
    initial: collecting
    handoff: handoff
    terminal: [done]
    transitions:
      collecting: [executing, handoff]
      executing: [done, collecting, handoff]
    actions:
      executing: [update_order]
    events:
      - name: clarification_required
        from: [executing]
        to: collecting
tools:
  - name: update_order
    input_schema: {type: object}
    on_exhausted: {event: clarification_required}
    risk: write
"""


def test_a_machine_change_that_leaves_a_tool_naming_what_is_gone_is_refused(actor):
    _load(ORDERS, actor)
    machine = StateMachine.objects.get(key="orders")
    machine.events = []
    with pytest.raises(ValidationError) as refused:
        machine_save(machine=machine, actor=actor, reason="no events")
    assert "update_order on_exhausted.event: Unknown event 'clarification_required'" in refused.value.messages[0]
    assert StateMachine.objects.get(key="orders").events != []
    # The same change with the tool changed too, in one import, applies (once approved: on_exhausted of a
    # write tool): the configuration is checked as a whole, whatever order the records are written in.
    without = ORDERS.replace(
        "    events:\n      - name: clarification_required\n        from: [executing]\n        to: collecting\n", ""
    )
    approved(lambda: _load(without.replace("{event: clarification_required}", "handoff"), actor))
    assert StateMachine.objects.get(key="orders").events == []

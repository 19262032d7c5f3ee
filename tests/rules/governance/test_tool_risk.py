"""Four-eyes on tool contracts: changing a write or destructive tool's schemas, error policy or risk waits
for a second person in every path (admin form, history revert, import, staff API, shell, MCP import)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from rules.config.document.diff import config_diff
from rules.config.document.validate import config_from_yaml
from rules.config.tools import tool_save
from rules.config.yaml_import import config_import
from rules.errors import ApprovalRequired
from rules.governance.risk import change_risks
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision, ToolContract
from tests.support import approved
from tests.support.admin import form_data
from tests.support.tools import DEMO_WITH_TOOLS

LOOSER = DEMO_WITH_TOOLS.replace("address: {type: string, minLength: 5, maxLength: 200}", "address: {type: string}")


@pytest.fixture
def tooled(db):
    """The demo with its tool contracts as revision 1 (the first configuration applies at once)."""
    result = config_import(text=DEMO_WITH_TOOLS, source="tools.yaml", actor=None, reason="tools")
    assert result.revision == 1
    return result


def _risks(before: str, after: str) -> list[tuple[str, str]]:
    old, new = config_from_yaml(before), config_from_yaml(after)
    return [(r.record, r.why) for r in change_risks(old, new, config_diff(old, new))]


def test_what_is_high_risk_for_a_tool():
    assert _risks(DEMO_WITH_TOOLS, LOOSER) == [
        ("tool update_order", "changes input_schema of a write or destructive tool")
    ]
    # The same change to a read-only tool applies at once.
    looser_read = DEMO_WITH_TOOLS.replace(
        'pattern: "^[A-Z]{2}[0-9]{8}$"}\n      required: [order_id]\n    error_codes:\n      - code: ORDER_NOT_FOUND',
        'pattern: "^.*$"}\n      required: [order_id]\n    error_codes:\n      - code: ORDER_NOT_FOUND',
    )
    assert looser_read != DEMO_WITH_TOOLS and _risks(DEMO_WITH_TOOLS, looser_read) == []
    # Lowering a write tool to read-only is judged by the side where it writes.
    lowered = DEMO_WITH_TOOLS.replace("risk: write", "risk: read_only")
    assert _risks(DEMO_WITH_TOOLS, lowered) == [("tool update_order", "changes risk of a write or destructive tool")]
    retried = DEMO_WITH_TOOLS.replace("max_retries: 2", "max_retries: 9")
    assert _risks(DEMO_WITH_TOOLS, retried) == [
        ("tool update_order", "changes error_codes of a write or destructive tool")
    ]
    # Description, timeout and limits apply at once; so does a new destructive tool.
    calmer = DEMO_WITH_TOOLS.replace("timeout_ms: 5000", "timeout_ms: 8000").replace(
        "Changes an order's", "Changes the order's"
    )
    assert _risks(DEMO_WITH_TOOLS, calmer) == []
    head, _, _ = DEMO_WITH_TOOLS.partition("\ntools:\n")
    assert _risks(head + "\n", DEMO_WITH_TOOLS) == []
    assert _risks(DEMO_WITH_TOOLS, head + "\n") == [
        ("tool update_order", "deletes the contract of a write or destructive tool")
    ]


def test_the_shell_service_holds_a_schema_change(tooled, editor):
    tool = ToolContract.objects.get(name="update_order")
    tool.input_schema = {"type": "object"}
    with pytest.raises(ApprovalRequired) as held:
        tool_save(tool=tool, actor=editor, reason="accept anything")
    assert [r["why"] for r in held.value.change_request.risks] == [
        "changes input_schema of a write or destructive tool"
    ]
    assert ToolContract.objects.get(name="update_order").input_schema != {"type": "object"}
    assert ConfigRevision.objects.count() == 1

    # Once a second person approves, it applies.
    def write_again():
        raise held.value

    approved(write_again)
    assert ToolContract.objects.get(name="update_order").input_schema == {"type": "object"}


def test_the_admin_form_sends_a_schema_change_to_a_change_request(tooled, editor, client):
    client.force_login(editor)
    tool = ToolContract.objects.get(name="update_order")
    url = reverse("admin:rules_toolcontract_change", args=[tool.pk])
    page = client.get(url)
    assert "Write or destructive tool: changing its schemas" in page.content.decode()
    data = form_data(page)
    data.update(input_schema="type: object\n", change_reason="loosen")
    response = client.post(url, data, follow=True)
    request = ChangeRequest.objects.get()
    assert response.redirect_chain[-1][0] == reverse("admin:rules_changerequest_change", args=[request.pk])
    assert "changes input_schema of a write or destructive tool" in response.content.decode()
    assert ToolContract.objects.get(name="update_order").input_schema["additionalProperties"] is False
    # A timeout applies at once.
    data = form_data(client.get(url))
    data.update(timeout_ms="9000", change_reason="slower upstream")
    assert client.post(url, data).status_code == 302
    assert ToolContract.objects.get(name="update_order").timeout_ms == 9000


def test_reverting_a_tool_from_its_history_waits(tooled, editor, client):
    tool = ToolContract.objects.get(name="update_order")
    original = tool.history.get()
    tool.error_codes = []
    approved(lambda: tool_save(tool=tool, actor=editor, reason="no retries"))
    client.force_login(editor)
    url = reverse("admin:rules_toolcontract_simple_history", args=[tool.pk, original.history_id])
    response = client.post(url, form_data(client.get(url)))
    revert = ChangeRequest.objects.filter(state="pending").get()
    assert response["Location"] == reverse("admin:rules_changerequest_change", args=[revert.pk])
    assert ToolContract.objects.get(name="update_order").error_codes == []


def test_an_import_of_a_schema_change_becomes_a_request(tooled, editor, tmp_path):
    path = tmp_path / "looser.yaml"
    path.write_text(LOOSER, encoding="utf-8")
    out = io.StringIO()
    call_command("import_config", str(path), "--user", "editor", stdout=out)
    request = ChangeRequest.objects.get()
    lines = out.getvalue().splitlines()
    assert "needs approval: tool update_order: changes input_schema of a write or destructive tool" in lines
    assert lines[-1] == f"change request {request.pk} pending approval"
    assert ConfigRevision.objects.count() == 1


def test_the_staff_api_holds_a_schema_change(tooled, editor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    held = api.post("/api/v1/change-requests", {"reason": "loosen", "config": LOOSER}, format="json")
    assert held.status_code == 201, held.content
    body = held.json()
    assert (body["state"], body["risk"]) == ("pending", "high")
    assert any(d["record"] == "tool update_order" and d["field"] == "input_schema" for d in body["diff"])
    assert ToolContract.objects.get(name="update_order").input_schema["properties"]["address"]["minLength"] == 5


def test_an_mcp_import_that_changes_a_write_tool_waits(tooled, editor, tmp_path):
    path = tmp_path / "tools.json"
    mcp = {"name": "update_order", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": False}}
    path.write_text(json.dumps({"tools": [mcp]}), encoding="utf-8")
    out = io.StringIO()
    call_command("mcp_tools", "import", str(path), "--user", "editor", stdout=out)
    request = ChangeRequest.objects.get()
    assert out.getvalue().strip() == f"change request {request.pk} pending approval"
    assert ToolContract.objects.get(name="update_order").input_schema != {"type": "object"}


def test_a_partial_change_request_merges_tools_by_name_and_holds_a_deletion(tooled, editor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    calmer = "version: 1\ntools:\n  - name: update_order\n    timeout_ms: 7000\n"
    applied = api.post("/api/v1/change-requests", {"reason": "t", "config": calmer, "partial": True}, format="json")
    assert (applied.status_code, applied.json()["state"]) == (201, "applied"), applied.content
    tool = ToolContract.objects.get(name="update_order")
    assert (tool.timeout_ms, tool.risk) == (7000, "write")
    gone = "version: 1\ndelete:\n  tools: [update_order]\n"
    held = api.post("/api/v1/change-requests", {"reason": "d", "config": gone, "partial": True}, format="json")
    assert (held.status_code, held.json()["state"], held.json()["risk"]) == (201, "pending", "high"), held.content
    assert ToolContract.objects.filter(name="update_order").exists()

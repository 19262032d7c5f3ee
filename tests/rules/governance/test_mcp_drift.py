"""Drift of upstream MCP tools: a tool whose definition differs from its approved contract (or that has
none) is recorded once — however many threads and processes see it — with a change request proposing the
upstream's definition, which a person approves (a read-only tool's too); the tool is offered again once
it applies, and a drift resolves itself when the upstream goes back."""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import translation

from rules.config.mcp_servers import mcp_tools_seen
from rules.config.tools import tool_save
from rules.config.yaml_import import config_import
from rules.governance.change_requests import change_request_approve, change_request_reject
from rules.governance.mcp_drift import UPSTREAM_USERNAME
from rules.models import ChangeRequest, ConfigRevision, McpToolDrift, ToolContract
from tests.support import make_user, reviewed_digest
from tests.support.mcp_servers import DEMO_WITH_SERVERS, ORDER_ID, ORDERS_TOOLS

WIDER = {
    "type": "object",
    "properties": {"order_id": ORDER_ID, "address": {"type": "string"}, "note": {"type": "string"}},
    "required": ["order_id"],
}


def _load() -> None:
    result = config_import(text=DEMO_WITH_SERVERS, source="servers.yaml", actor=None, reason="servers")
    assert result.revision == 1


def _tools(**changes: dict) -> list[dict]:
    """The orders server's tools/list, with some tools' fields replaced (by tool name)."""
    return [{**tool, **changes.get(tool["name"], {})} for tool in ORDERS_TOOLS]


def _approve(request: ChangeRequest) -> ChangeRequest:
    approver = make_user("approver", "risk_approvers")
    return change_request_approve(
        request=request, actor=approver, digest=reviewed_digest(request), reason="the upstream's new field is fine"
    )


class _Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(autouse=True)
def _recorded_without_failing():
    """mcp_tools_seen logs a failure to record instead of raising (what is offered does not depend on it):
    every test here fails if recording failed, in any thread (a handler of its own: the log's, not pytest's)."""
    failures = _Failures()
    logger = logging.getLogger("arbiter.mcp")
    logger.addHandler(failures)
    try:
        yield
    finally:
        logger.removeHandler(failures)
    assert failures.messages == []


@pytest.fixture
def served(db):
    _load()


def test_a_changed_tool_is_held_back_recorded_once_and_proposed(served):
    changed = _tools(update_order={"inputSchema": WIDER})
    assert mcp_tools_seen("orders", changed) == {"update_order"}
    drift = McpToolDrift.objects.get()
    assert (drift.server, drift.tool, drift.kind, drift.status) == ("orders", "update_order", "changed", "open")
    assert drift.upstream["inputSchema"] == WIDER and len(drift.fingerprint) == 64
    request = drift.change_request
    assert (request.state, request.author.username) == ("pending", UPSTREAM_USERNAME)
    assert request.author.is_active is False and not request.author.has_usable_password()
    assert request.risks[0]["why"].startswith("adopts the definition its upstream MCP server now gives")
    assert [(c["kind"], c["key"], c["action"]) for c in request.changes] == [("tool", "orders.update_order", "change")]
    # What MCP does not describe stays as approved: the error codes, the timeout.
    after = request.changes[0]["after"]
    assert after["input_schema"] == WIDER
    assert (after["timeout_ms"], after["error_codes"][0]["code"]) == (4000, "ORDER_LOCKED")
    history = drift.history.order_by("history_id")
    assert [(h.history_change_reason, h.history_user.username) for h in history] == [
        ("seen upstream", UPSTREAM_USERNAME),
        ("its change request filed", UPSTREAM_USERNAME),
    ]
    first_seen = drift.last_seen
    # Seen again: still held back, the same drift and request, only last_seen moves.
    assert mcp_tools_seen("orders", changed) == {"update_order"}
    again = McpToolDrift.objects.get()
    assert (again.pk, again.change_request_id, again.first_seen) == (drift.pk, request.pk, drift.first_seen)
    assert again.last_seen >= first_seen
    assert ChangeRequest.objects.count() == 1 and ConfigRevision.objects.count() == 1


def test_a_read_only_tool_waits_for_a_person_too(served):
    status = {"type": "object", "properties": {"status": {"type": "string"}, "eta": {"type": "string"}}}
    assert mcp_tools_seen("orders", _tools(query_order={"outputSchema": status})) == {"query_order"}
    request = McpToolDrift.objects.get(tool="query_order").change_request
    # Against the four-eyes rules alone this would apply at once (a read-only tool's contract): it waits.
    assert (request.state, request.risk) == ("pending", "high")
    assert ToolContract.objects.get(name="orders.query_order").output_schema != status


def test_a_new_upstream_tool_is_proposed_from_its_definition(served):
    cancel = {"name": "cancel_order", "description": "Cancels an order.", "inputSchema": {"type": "object"}}
    assert mcp_tools_seen("orders", [*ORDERS_TOOLS, cancel]) == {"cancel_order"}
    drift = McpToolDrift.objects.get()
    assert (drift.kind, drift.approved) == ("new", None)
    after = drift.change_request.changes[0]
    assert (after["action"], after["after"]["risk"]) == ("add", "destructive")  # MCP's default hints


def test_approved_by_a_second_person_the_tool_is_offered_again(served):
    changed = _tools(update_order={"inputSchema": WIDER})
    mcp_tools_seen("orders", changed)
    request = McpToolDrift.objects.get().change_request
    assert _approve(request).state == "applied"
    contract = ToolContract.objects.get(name="orders.update_order")
    assert (contract.input_schema, contract.timeout_ms) == (WIDER, 4000)
    assert mcp_tools_seen("orders", changed) == frozenset()
    assert McpToolDrift.objects.get().status == "adopted"


def test_an_upstream_going_back_resolves_the_drift_and_withdraws_its_request(served):
    mcp_tools_seen("orders", _tools(update_order={"inputSchema": WIDER}))
    assert mcp_tools_seen("orders", ORDERS_TOOLS) == frozenset()
    drift = McpToolDrift.objects.get()
    assert (drift.status, drift.change_request.state) == ("resolved", "withdrawn")
    assert drift.history.first().history_change_reason == "the upstream went back to the approved definition"


def test_an_upstream_changing_again_replaces_the_open_drift(served):
    mcp_tools_seen("orders", _tools(update_order={"inputSchema": WIDER}))
    first = McpToolDrift.objects.get()
    other = {**WIDER, "required": ["order_id", "note"]}
    assert mcp_tools_seen("orders", _tools(update_order={"inputSchema": other})) == {"update_order"}
    first.refresh_from_db()
    assert (first.status, first.change_request.state) == ("resolved", "withdrawn")
    current = McpToolDrift.objects.get(status="open")
    assert current.change_request.changes[0]["after"]["input_schema"] == other


def test_a_rejected_request_keeps_the_tool_held_back(served):
    changed = _tools(update_order={"inputSchema": WIDER})
    mcp_tools_seen("orders", changed)
    request = McpToolDrift.objects.get().change_request
    change_request_reject(request=request, actor=make_user("approver", "risk_approvers"), reason="not this")
    assert mcp_tools_seen("orders", changed) == {"update_order"}
    assert McpToolDrift.objects.get().status == "open" and ChangeRequest.objects.count() == 1


def test_a_definition_that_cannot_be_a_contract_is_recorded_without_a_request(served):
    broken = _tools(update_order={"inputSchema": {"type": "object", "properties": {"x": {"type": "strng"}}}})
    assert mcp_tools_seen("orders", broken) == {"update_order"}
    drift = McpToolDrift.objects.get()
    assert drift.change_request is None and "Not a valid JSON Schema" in drift.problem


@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writers need PostgreSQL")
def test_many_threads_seeing_the_same_drift_record_it_once(transactional_db):
    _load()
    changed = _tools(update_order={"inputSchema": WIDER})
    threads = 8
    barrier = threading.Barrier(threads)
    answers: list[frozenset[str]] = []
    failures: list[BaseException] = []

    def gateway_thread() -> None:
        try:
            barrier.wait(timeout=30)
            answers.append(mcp_tools_seen("orders", changed))
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    running = [threading.Thread(target=gateway_thread) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout=120)
    assert not failures and answers == [frozenset({"update_order"})] * threads
    assert McpToolDrift.objects.count() == 1 and ChangeRequest.objects.count() == 1
    assert McpToolDrift.objects.get().change_request_id == ChangeRequest.objects.get().pk


def test_the_admin_lists_drifts_and_shows_the_difference(served, client):
    mcp_tools_seen("orders", _tools(update_order={"inputSchema": WIDER}))
    drift = McpToolDrift.objects.get()
    editor = make_user("editor", "config_editors")
    client.force_login(editor)
    listing = client.get(reverse("admin:rules_mcptooldrift_changelist"))
    assert listing.status_code == 200
    row = listing.content.decode().split("<tbody>")[1].split("</tbody>")[0]
    assert reverse("admin:rules_mcptooldrift_change", args=[drift.pk]) in row  # a row per drift
    for cell in ('field-server">orders<', 'field-kind">changed<', 'field-status">open<', "field-first_seen_cell"):
        assert cell in row
    page = client.get(reverse("admin:rules_mcptooldrift_change", args=[drift.pk])).content.decode()
    assert 'id="drift-diff"' in page and "input_schema" in page and "note" in page
    assert reverse("admin:rules_changerequest_change", args=[drift.change_request_id]) in page
    assert 'id="drift-history"' in page and ": open" in page
    assert client.get(reverse("admin:rules_mcptooldrift_add")).status_code == 403
    with translation.override("zh-hans"):
        chinese = client.get(
            reverse("admin:rules_mcptooldrift_change", args=[drift.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
    assert "MCP 工具漂移" in chinese and "已批准的契约" in chinese


def test_a_request_superseded_under_the_drift_is_filed_again(served, actor):
    changed = _tools(update_order={"inputSchema": WIDER})
    mcp_tools_seen("orders", changed)
    first = McpToolDrift.objects.get().change_request
    # Staff change the contract meanwhile (a timeout applies at once): the request no longer fits.
    tool = ToolContract.objects.get(name="orders.update_order")
    tool.timeout_ms = 6000
    tool_save(tool=tool, actor=actor, reason="slower upstream")
    first.refresh_from_db()
    assert first.state == "superseded"
    assert mcp_tools_seen("orders", changed) == {"update_order"}
    drift = McpToolDrift.objects.get()
    assert drift.change_request_id != first.pk and drift.change_request.state == "pending"
    assert drift.change_request.changes[0]["after"]["timeout_ms"] == 6000  # proposed on the contract as it is now


def test_a_server_the_configuration_does_not_have_records_nothing(served):
    assert mcp_tools_seen("billing", ORDERS_TOOLS) == {"query_order", "update_order"}
    assert not McpToolDrift.objects.exists() and not ChangeRequest.objects.exists()

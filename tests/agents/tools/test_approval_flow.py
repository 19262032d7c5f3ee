"""The approval of a destructive tool call end to end, over real HTTP against a running server: the
agent's call in a state its contract names in ``needs_approval_in`` answers ``202 awaiting_approval`` and
hands the session to the human queue with the proposed call; a person approves it in the staff API and the
agent's repeat (same operation id) goes ahead with ``201``; rejected, the repeat is ``422
tool_call_rejected``. The agent learns the outcome from its session object and its timeline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from tests.support.approvals import approver
from tests.support.http import Agent, assert_problem
from tests.support.live_sqlite import connection_per_request

DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: orders
    states: [browsing, confirming, human_handoff, done]
    initial: browsing
    handoff: human_handoff
    terminal: [done]
    transitions:
      browsing: [confirming, human_handoff]
      confirming: [done, browsing, human_handoff]
      human_handoff: [done, browsing]
    actions:
      browsing: [cancel_order]
      confirming: [cancel_order]
tools:
  - name: cancel_order
    input_schema:
      type: object
      properties:
        order_id: {type: string}
        receiver_phone: {type: string}
      required: [order_id]
      additionalProperties: false
    risk: destructive
    needs_approval_in: [confirming]
"""

INPUT = {"order_id": "A-1001", "receiver_phone": "13800138000"}


@pytest.fixture
def world(live_server, transactional_db, tmp_path) -> Iterator[tuple[Agent, Agent]]:
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        config_import(text=DOCUMENT, source="test", actor=None, reason="approval flow")
        _, token = agent_create(name="order_bot", point_keys=[], actor=None, reason="t")
        bot = Agent(live_server.url, token, "order_bot")
        boss = Agent(live_server.url, staff_token_create(user=approver("boss", "queue_operators")), "boss")
        yield bot, boss


def _call(bot: Agent, key: str, operation_id: str, state: str = "confirming"):
    body = {"tool": "cancel_order", "input": INPUT, "expected_state": state, "operation_id": operation_id}
    return bot.post(f"/api/v1/sessions/{key}/tool-calls", body)


def _waiting(bot: Agent, boss: Agent, key: str, operation_id: str) -> int:
    assert bot.start("orders", key).status == 201
    # Where the contract does not ask for a person, the call goes ahead at once.
    assert _call(bot, key, f"{operation_id}-free", state="browsing").status == 201
    assert bot.move(key, "confirming", "browsing").status == 200
    asked = _call(bot, key, operation_id)
    assert (asked.status, asked.code) == (202, "awaiting_approval"), asked
    assert asked.body["session"]["state"] == "human_handoff"
    assert asked.body["session"]["handoff_reason"] == "approval"
    # Asking again while it waits changes nothing.
    again = _call(bot, key, operation_id)
    assert (again.status, again.code) == (202, "awaiting_approval"), again
    queue = boss.get("/api/v1/queue?reason=approval")
    assert queue.status == 200, queue
    (item,) = [i for i in queue.body["queue"] if i["session_id"] == key]
    proposed = item["proposed_call"]
    assert (proposed["operation_id"], proposed["tool"], proposed["risk"], proposed["state"]) == (
        operation_id,
        "cancel_order",
        "destructive",
        "confirming",
    )
    assert proposed["input"]["order_id"] == "A-1001"
    assert proposed["input"]["receiver_phone"] != "13800138000"  # stored masked
    return item["id"]


def test_approved_the_repeat_goes_ahead(world):
    bot, boss = world
    pk = _waiting(bot, boss, "o1", "op-approve")
    approved = boss.post(f"/api/v1/queue/{pk}/approve", {"note": "customer asked twice"})
    assert approved.status == 200, approved
    assert (approved.body["status"], approved.body["state"]) == ("approved", "confirming")
    session = bot.session("o1")["session"]
    assert (session["state"], session["handed_off"]) == ("confirming", False)
    events = bot.get("/api/v1/sessions/o1/timeline").body["events"]
    assert [(e["type"], e["kind"]) for e in events[-3:]] == [
        ("state_transition", "approval"),
        ("queue", "approve"),
        ("state_transition", "approval"),
    ]
    assert events[-2]["note"] == "customer asked twice" and events[-1]["actor"] == "operator:boss"
    going = _call(bot, "o1", "op-approve")
    assert going.status == 201, going
    assert going.body["operation_id"] == "op-approve" and going.body["attempt"] == 1
    done = bot.post("/api/v1/tool-calls/op-approve/result", {"output": {}, "duration_ms": 5})
    assert done.status == 200 and done.body["next"] == "done", done


def test_rejected_the_repeat_is_refused(world):
    bot, boss = world
    pk = _waiting(bot, boss, "o2", "op-reject")
    no_note = boss.post(f"/api/v1/queue/{pk}/reject", {})
    assert_problem(no_note, 422, "invalid_request")
    rejected = boss.post(f"/api/v1/queue/{pk}/reject", {"note": "order already shipped"})
    assert rejected.status == 200 and rejected.body["status"] == "rejected", rejected
    events = bot.get("/api/v1/sessions/o2/timeline").body["events"]
    assert (events[-2]["kind"], events[-2]["note"]) == ("reject", "order already shipped")
    refused = assert_problem(_call(bot, "o2", "op-reject"), 422, "tool_call_rejected")
    assert "order already shipped" in refused["detail"]
    assert refused["session"]["state"] == "confirming"
    # The decision is made once: approving it now is refused cleanly.
    assert_problem(boss.post(f"/api/v1/queue/{pk}/approve", {}), 409, "not_awaiting_approval")
    # A new operation in the same state waits for a person again.
    asked = _call(bot, "o2", "op-reject-2")
    assert (asked.status, asked.code) == (202, "awaiting_approval"), asked


def test_agent_tokens_cannot_decide(world):
    bot, boss = world
    pk = _waiting(bot, boss, "o3", "op-agent")
    for step in ("approve", "reject"):
        refused = bot.post(f"/api/v1/queue/{pk}/{step}", {"note": "me"})
        assert refused.status in (401, 403), refused
    assert_problem(_call(bot, "o3", "op-agent"), 202, "awaiting_approval")


def test_returned_without_a_decision_the_repeat_is_refused_not_left_waiting(world):
    # An operator may hand the session back without deciding: nobody will be asked about the call any
    # more, so the agent's repeat must not be told to keep waiting.
    bot, boss = world
    pk = _waiting(bot, boss, "o4", "op-lapsed")
    assert boss.post(f"/api/v1/queue/{pk}/claim", {}).status == 200
    returned = boss.post(f"/api/v1/queue/{pk}/return", {"state": "browsing", "note": "customer changed their mind"})
    assert returned.status == 200, returned
    refused = assert_problem(_call(bot, "o4", "op-lapsed", state="browsing"), 422, "tool_call_rejected")
    assert "without a decision" in refused["detail"]
    assert refused["session"]["state"] == "browsing"
    # Settled once: deciding it now is refused, and a new operation goes ahead where no person is needed.
    assert_problem(boss.post(f"/api/v1/queue/{pk}/approve", {}), 409, "not_awaiting_approval")
    assert _call(bot, "o4", "op-lapsed-2", state="browsing").status == 201

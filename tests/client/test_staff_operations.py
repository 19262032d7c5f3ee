"""Every staff operation of the client against a live server (staff tokens), with a refusal each."""

from __future__ import annotations

import arbiter_client as ac
import pytest

from tests.support import DEMO_TEXT, reviewed_digest

RAISED = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")


def test_simulate(live) -> None:
    ops = live.staff("ops", superuser=True)
    tried = ops.simulate("intent_routing", input="我要投诉", session_state="init")
    assert (tried["decision"], tried["ruled_by"]) == ("human_handoff", "hard_rule")
    with pytest.raises(ac.UnknownPoint):
        ops.simulate("no_such_point")


def test_an_agent_token_is_refused_on_staff_operations(bot) -> None:
    with pytest.raises(ac.PermissionDenied) as refused:
        bot.change_requests()
    assert refused.value.status == 403


def test_change_requests_over_the_client_follow_the_four_eyes_rules(live) -> None:
    from rules.models import ChangeRequest

    editor = live.staff("editor", "config_editors")
    approver = live.staff("approver", "risk_approvers")
    held = editor.change_request_create(RAISED, reason="raise the limit")
    assert held["state"] == "pending"
    assert editor.change_request(held["id"])["digest"] == held["digest"]
    digest = reviewed_digest(ChangeRequest.objects.get(pk=held["id"]))
    with pytest.raises(ac.SelfApprovalForbidden):
        editor.change_request_approve(held["id"], digest=digest)
    done = approver.change_request_approve(held["id"], digest=digest, reason="checked")
    assert done["state"] == "applied"
    with pytest.raises(ac.NotPending):
        approver.change_request_reject(held["id"])
    assert [r["id"] for r in approver.change_requests(state="applied")["change_requests"]] == [held["id"]]
    with pytest.raises(ac.InvalidRequest):
        approver.change_requests(state="")
    with pytest.raises(ac.InvalidConfig):
        editor.change_request_create("version: 1\nthresholds: 5\n", reason="broken")
    with pytest.raises(ac.NoChanges):
        editor.change_request_create(RAISED, reason="the same again")

    lowered = editor.change_request_create(RAISED.replace("value: 99999", "value: 700"), reason="lower")
    refused = editor.change_request_create(RAISED.replace("value: 99999", "value: 800"), reason="other")
    assert approver.change_request_reject(refused["id"], reason="no")["state"] == "rejected"
    with pytest.raises(ac.PermissionDenied):
        approver.change_request_withdraw(lowered["id"])  # only its author withdraws a request
    assert editor.change_request_withdraw(lowered["id"], reason="changed my mind")["state"] == "withdrawn"
    with pytest.raises(ac.NotFound):
        editor.change_request(999_999_999)


def test_the_decision_map_as_json_and_csv(live, bot) -> None:
    bot.decide("intent_routing", input="我要投诉")
    ops = live.staff("ops", superuser=True)
    report = ops.decision_map(days=1)
    routing = next(p for p in report["points"] if p["key"] == "intent_routing")
    assert routing["by_ruled_by"]["hard_rule"] == 1
    assert ops.decision_map(point="refund_approval")["points"][0]["key"] == "refund_approval"
    csv = ops.decision_map_csv(days=1)
    assert "intent_routing" in csv and "," in csv.splitlines()[0]
    with pytest.raises(ac.InvalidRequest) as refused:
        ops.decision_map(days=0)
    assert "days" in refused.value.errors
    with pytest.raises(ac.UnknownPoint):
        ops.decision_map_csv(point="no_such_point")


def test_the_human_queue(live, bot) -> None:
    for key in ("q-1", "q-2"):
        bot.session_create("after_sales", session_id=key)
        bot.decide("intent_routing", session_id=key, input="我要投诉", apply=True)
    ops = live.staff("ops", "queue_operators")
    other = live.staff("li", "queue_operators")
    waiting = {item["session_id"]: item for item in ops.queue()["queue"]}
    first, second = waiting["q-1"]["id"], waiting["q-2"]["id"]
    assert ops.queue_claim(first, note="mine")["claimed_by"] == "ops"
    assert [i["id"] for i in ops.queue(holder="mine")["queue"]] == [first]
    with pytest.raises(ac.ClaimedByOther):
        other.queue_claim(first)
    with pytest.raises(ac.ClaimedByOther):
        other.queue_release(first)
    assert ops.queue_release(first)["claimed_by"] is None
    with pytest.raises(ac.InvalidRequest):
        ops.queue(reason="bored")
    ops.queue_claim(first)
    returned = ops.queue_return(first, "escalated", note="calm now")
    assert (returned["from"], returned["state"]) == ("human_handoff", "escalated")
    with pytest.raises(ac.NotInQueue):
        ops.queue_claim(first)
    ops.queue_claim(second)
    with pytest.raises(ac.IllegalTransition):
        ops.queue_return(second, "init")
    resolved = ops.queue_resolve(second, "closed", note="refunded")
    assert resolved["state"] == "closed"
    with pytest.raises(ac.NotFound):
        ops.queue_resolve(999_999_999, "closed", note="x")


def test_the_live_configuration_as_yaml_and_json(live, bot) -> None:
    import yaml

    reader = live.staff("reader", "risk_approvers")
    text = reader.config()
    document = reader.config_document()
    assert yaml.safe_load(text) == document
    assert "auto_refund_limit" in {t["key"] for t in document["thresholds"]}
    with pytest.raises(ac.PermissionDenied):
        bot.config()
    with pytest.raises(ac.PermissionDenied):
        live.staff("queue", "queue_operators").config_document()

"""Each kind of event, made where Arbiter makes it, is delivered once to a subscription that wants it: the
session's moves (handed off, timed out, returned, resolved), a tool call waiting for approval and decided,
a breaker opened and closed (by hand and by failures), a change request pending and applied. And an
agent's events go to its own subscriptions only; installation events to every agent's that asks."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.queue.services import queue_resolve, queue_return
from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from agents.sessions.services import session_create, session_transition
from agents.sessions.timeouts import session_timeouts_sweep
from agents.tools.approvals import approval_decide
from agents.tools.breaker_services import breaker_change
from agents.tools.gate import breaker_record
from agents.webhooks.models import EventKind, WebhookDelivery
from rules.config import records
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_approve
from rules.models import Threshold
from tests.support import make_user, reviewed_digest
from tests.support.approvals import call_waiting, session_in_collecting
from tests.support.webhooks import subscribe, wait_for, webhook_receiver

QUERY_BREAKER = {"failure_threshold": 5, "window_s": 30, "half_open_after_ms": 10000, "trial_calls": 2}


def _hand_off(agent, key: str) -> Session:
    session_create(agent=agent, machine_key="after_sales", session_id=key)
    session_transition(agent=agent, session_id=key, to="human_handoff", expected_state="init")
    return Session.objects.get(key=key)


def _expired(agent, key: str) -> None:
    session_create(agent=agent, machine_key="change_address", session_id=key)
    session_transition(agent=agent, session_id=key, to="awaiting_intent", expected_state="created")
    Session.objects.filter(key=key).update(
        state_entered_at=timezone.now() - dt.timedelta(minutes=10)
    )  # a test shortcut


def _held(editor) -> object:
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("1000")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="raise the limit")
    return held.value.change_request


def test_each_kind_of_event_is_delivered_once_where_it_happens(bot, staff_user, delivering):
    editor = make_user("editor", "config_editors")
    with webhook_receiver(204) as receiver:
        subscribe(bot, receiver.url)  # every kind
        seen = 0

        def step(write, *kinds: str) -> None:
            nonlocal seen
            write()
            expected = seen + len(kinds)
            wait_for(lambda: len(receiver.received) >= expected, message=f"{kinds} not delivered")
            assert Counter(receiver.kinds()[seen:]) == Counter(kinds)
            seen = expected

        session = _hand_off(bot, "c1")
        step(lambda: None, EventKind.SESSION_HANDED_OFF)
        step(lambda: queue_return(session_pk=session.pk, user=staff_user, state="escalated"), "session.returned")
        other = []
        step(lambda: other.append(_hand_off(bot, "c2")), "session.handed_off")
        step(
            lambda: queue_resolve(session_pk=other[0].pk, user=staff_user, state="closed", note="refunded"),
            "session.resolved",
        )
        _expired(bot, "t1")
        step(session_timeouts_sweep, "session.timed_out")
        asked = session_in_collecting(bot, "a1")
        calls = []
        step(lambda: calls.append(call_waiting(bot, asked)), "session.handed_off", "tool_call.awaiting_approval")
        step(lambda: approval_decide(call_pk=calls[0].pk, user=staff_user, approve=True, note=""), "tool_call.decided")
        step(
            lambda: breaker_change(tool="query_order", action="open", user=staff_user, reason="outage"),
            "breaker.opened",
        )
        step(
            lambda: breaker_change(tool="query_order", action="close", user=staff_user, reason="back"), "breaker.closed"
        )

        def failures() -> None:
            for _ in range(QUERY_BREAKER["failure_threshold"]):
                breaker_record("query_order", breaker=QUERY_BREAKER, ok=False)

        step(failures, "breaker.opened")
        requests = []
        step(lambda: requests.append(_held(editor)), "change_request.pending")
        step(
            lambda: change_request_approve(request=requests[0], actor=staff_user, digest=reviewed_digest(requests[0])),
            "change_request.applied",
        )
        payloads = {r.payload["type"]: r.payload["data"] for r in receiver.received}
    assert payloads["session.returned"]["actor"] == "operator:ops"
    assert payloads["session.timed_out"]["handoff_reason"] == "timeout"
    assert payloads["tool_call.awaiting_approval"]["tool"] == "update_order"
    decided = payloads["tool_call.decided"]
    assert (decided["status"], decided["decided_by"], decided["operation_id"]) == ("approved", "ops", "op-1")
    assert payloads["breaker.opened"] == {**payloads["breaker.opened"], "tool": "query_order", "state": "open"}
    pending, applied = payloads["change_request.pending"], payloads["change_request.applied"]
    assert pending["change_request"] == applied["change_request"] == requests[0].pk
    assert (pending["state"], applied["state"]) == ("pending", "applied") and applied["applied_revision"]
    assert {"action": "change", "kind": "threshold", "key": "auto_refund_limit", "point": None} in pending["changes"]


def test_an_agents_events_go_to_its_own_subscriptions_installation_events_to_all(bot, staff_user, delivering):
    other, _ = agent_create(name="other_bot", point_keys=[], actor=None, reason="webhook tests")
    with webhook_receiver(204) as mine, webhook_receiver(204) as theirs:
        subscribe(bot, mine.url, EventKind.SESSION_HANDED_OFF, EventKind.BREAKER_OPENED)
        subscribe(other, theirs.url, EventKind.SESSION_HANDED_OFF, EventKind.BREAKER_OPENED)
        _hand_off(bot, "c1")
        breaker_change(tool="query_order", action="open", user=staff_user, reason="outage")
        wait_for(lambda: len(mine.received) == 2 and len(theirs.received) == 1)
        assert sorted(mine.kinds()) == ["breaker.opened", "session.handed_off"]
        assert theirs.kinds() == ["breaker.opened"]
    # One event, two deliveries with one id.
    opened = WebhookDelivery.objects.filter(kind="breaker.opened")
    assert opened.count() == 2 and len(set(opened.values_list("event_id", flat=True))) == 1


@pytest.mark.django_db
def test_nothing_is_recorded_for_an_event_no_one_wants(bot):
    with webhook_receiver(204) as receiver:
        subscribe(bot, receiver.url, EventKind.SESSION_RESOLVED)
        _hand_off(bot, "c1")
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_a_handoff_of_an_agent_without_subscriptions_makes_no_statement_more(bot, settings):
    # Another agent's subscription: the per-process list is not empty, just not this agent's.
    other, _ = agent_create(name="other_bot", point_keys=[], actor=None, reason="webhook tests")
    subscribe(other, "https://hooks.example.com/other", EventKind.SESSION_HANDED_OFF)
    settings.ARBITER_REVISION_CHECK_SECONDS = 3600  # as in production: the check is not due on every call
    _hand_off(bot, "warm")  # the first move reads the revision and the subscriptions once
    with CaptureQueriesContext(connection) as seen:
        _hand_off(bot, "c1")
    read = [q["sql"] for q in seen.captured_queries if "webhook" in q["sql"].lower() or "revision" in q["sql"].lower()]
    assert read == []
    assert not WebhookDelivery.objects.exists()

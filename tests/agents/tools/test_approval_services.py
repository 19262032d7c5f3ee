"""The approval of a tool call by a person, against the real database: the session waits in the human
queue with the proposed call, a person with the permission approves or rejects it once, and the session
goes back to the state the call was asked in."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from agents.errors import ClaimedByOther
from agents.queue.models import QueueEvent
from agents.queue.selectors import human_queue_list, human_queue_proposed_calls
from agents.queue.services import queue_claim, queue_resolve
from agents.runtimes.services import agent_create
from agents.sessions.models import Session, Transition, TransitionKind
from agents.sessions.selectors import session_timeline
from agents.tools.approvals import approval_decide, approval_pending_call
from agents.tools.errors import NotAwaitingApproval
from agents.tools.models import ToolCall
from decision_service.errors import InvalidRequest, PermissionDenied
from tests.support import load_demo, make_user
from tests.support.approvals import MASKED_INPUT, approver, call_waiting, session_in_collecting

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot(db):
    load_demo()
    agent, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    return agent


@pytest.fixture
def boss(db):
    return approver("boss")


def test_a_call_waiting_for_approval_puts_the_session_in_the_human_queue_with_the_proposed_call(bot):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session, operation_id="op-7")
    session.refresh_from_db()
    assert (session.state, session.handoff_reason, session.seq) == ("human_handoff", "approval", 3)
    move = Transition.objects.get(session=session, seq=3)
    assert (move.kind, move.from_state, move.actor) == (TransitionKind.APPROVAL, "collecting_params", "support_bot")
    assert "update_order" in move.reason and "op-7" in move.reason
    queued = list(human_queue_list(reason="approval"))
    assert [s.pk for s in queued] == [session.pk]
    proposed = human_queue_proposed_calls(queued)[session.pk]
    assert (proposed["id"], proposed["tool"], proposed["operation_id"]) == (call.pk, "update_order", "op-7")
    assert (proposed["risk"], proposed["state"], proposed["input"]) == (
        "destructive",
        "collecting_params",
        MASKED_INPUT,
    )
    assert approval_pending_call(session_pk=session.pk) == call


def test_approve_records_who_and_why_and_sends_the_session_back_where_the_call_was_asked(bot, boss):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    decided = approval_decide(call_pk=call.pk, user=boss, approve=True, note="  customer confirmed  ")
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decision_note) == ("approved", boss, "customer confirmed")
    assert call.decided_at is not None and decided.status == "approved"
    session.refresh_from_db()
    assert (session.state, session.handoff_reason, session.seq) == ("collecting_params", "", 4)
    back = Transition.objects.get(session=session, seq=4)
    assert (back.kind, back.from_state, back.to_state, back.actor) == (
        "approval",
        "human_handoff",
        "collecting_params",
        "operator:boss",
    )
    assert "approved" in back.reason and "customer confirmed" in back.reason
    (event,) = QueueEvent.objects.filter(session=session)
    assert (event.kind, event.actor, event.state, event.note) == (
        "approve",
        "operator:boss",
        "human_handoff",
        "customer confirmed",
    )
    # The agent's timeline: the move into the queue, the person's decision, the move back.
    kinds = [(e.kind, e.queue_event.kind if e.queue_event else e.transition.kind) for e in session_timeline(session)][
        -3:
    ]
    assert kinds == [("transition", "approval"), ("queue", "approve"), ("transition", "approval")]
    assert human_queue_proposed_calls(list(human_queue_list())) == {}


def test_reject_needs_a_note_and_then_sends_the_session_back_too(bot, boss):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    with pytest.raises(InvalidRequest) as refused:
        approval_decide(call_pk=call.pk, user=boss, approve=False, note="   ")
    assert "note" in refused.value.errors
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    approval_decide(call_pk=call.pk, user=boss, approve=False, note="wrong address")
    call.refresh_from_db()
    assert (call.status, call.decision_note) == ("rejected", "wrong address")
    session.refresh_from_db()
    assert session.state == "collecting_params"
    assert list(QueueEvent.objects.filter(session=session).values_list("kind", "note")) == [("reject", "wrong address")]


@pytest.mark.parametrize("who", ["no_permission", "queue_operator", "inactive", "not_staff"])
def test_only_an_active_staff_user_with_the_permission_decides(bot, who):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    user = {
        "no_permission": lambda: make_user("nobody"),
        "queue_operator": lambda: make_user("ops", "queue_operators"),
        "inactive": lambda: approver("gone", is_active=False),
        "not_staff": lambda: approver("outsider", is_staff=False),
    }[who]()
    with pytest.raises(PermissionDenied):
        approval_decide(call_pk=call.pk, user=user, approve=True, note="")
    call.refresh_from_db()
    session.refresh_from_db()
    assert (call.status, session.state) == ("awaiting_approval", "human_handoff")
    assert not QueueEvent.objects.exists()


def test_a_call_is_decided_once(bot, boss):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    approval_decide(call_pk=call.pk, user=boss, approve=True, note="")
    with pytest.raises(NotAwaitingApproval) as again:
        approval_decide(call_pk=call.pk, user=approver("second"), approve=False, note="too late")
    assert "approved" in again.value.detail and again.value.extra["state"] == "collecting_params"
    assert ToolCall.objects.get(pk=call.pk).decided_by == boss
    assert Session.objects.get(pk=session.pk).seq == 4


def test_a_session_claimed_by_someone_else_is_theirs_to_decide(bot, boss):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    holder = approver("li", "queue_operators")
    queue_claim(session_pk=session.pk, user=holder)
    with pytest.raises(ClaimedByOther):
        approval_decide(call_pk=call.pk, user=boss, approve=True, note="")
    approval_decide(call_pk=call.pk, user=holder, approve=True, note="")
    session.refresh_from_db()
    assert session.state == "collecting_params" and session.claimed_by is None  # the move ends the claim


def test_a_session_resolved_meanwhile_leaves_the_call_undecidable(bot, boss):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    queue_resolve(session_pk=session.pk, user=make_user("ops", "queue_operators"), state="failed", note="phoned")
    with pytest.raises(NotAwaitingApproval):
        approval_decide(call_pk=call.pk, user=boss, approve=True, note="")
    session.refresh_from_db()
    assert session.state == "failed"
    assert approval_pending_call(session_pk=session.pk) is None


def test_the_permission_is_its_own_not_the_queues(bot):
    session = session_in_collecting(bot, "c1")
    call = call_waiting(bot, session)
    user = make_user("ops", "queue_operators")
    assert not user.has_perm("agents.approve_tool_calls")
    user.user_permissions.add(Permission.objects.get(codename="approve_tool_calls"))
    user = type(user).objects.get(pk=user.pk)
    assert approval_decide(call_pk=call.pk, user=user, approve=True, note="").status == "approved"

"""Tool calls waiting for a person's approval, made as the tool-call check makes them: the call saved with
status ``awaiting_approval``, then ``call_await_approval`` under the session's lock."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from django.db import transaction

from agents.sessions.models import Session
from agents.sessions.reads import sessions_lock
from agents.sessions.services import session_create, session_transition
from agents.tools.approvals import call_await_approval
from agents.tools.models import ToolCall, ToolCallStatus
from tests.support import make_user

# The demo's change_address machine, from created to where an update of the order would be asked.
TO_COLLECTING = [("created", "awaiting_intent"), ("awaiting_intent", "collecting_params")]
MASKED_INPUT = {"order_id": "A-1001", "receiver_phone": "138****8000"}


def approver(username: str, *groups: str, **extra: Any) -> Any:
    """A staff user with ``agents.approve_tool_calls`` (no group has it by default: it is given by hand)."""
    staff = extra.pop("is_staff", True)
    user = make_user(username, *groups, **extra)
    if not staff:
        type(user).objects.filter(pk=user.pk).update(is_staff=False)
    user.user_permissions.add(Permission.objects.get(codename="approve_tool_calls", content_type__app_label="agents"))
    return type(user).objects.get(pk=user.pk)  # a fresh instance: the permission cache is empty


def session_in_collecting(agent: Any, key: str) -> Session:
    session_create(agent=agent, machine_key="change_address", session_id=key)
    for expected, to in TO_COLLECTING:
        session_transition(agent=agent, session_id=key, to=to, expected_state=expected)
    return Session.objects.get(key=key)


def call_waiting(agent: Any, session: Session, *, operation_id: str = "op-1", tool: str = "update_order") -> ToolCall:
    """A call of ``tool`` asked in the session's state, waiting for a person; the session is handed off."""
    with transaction.atomic():
        locked = sessions_lock(Session.objects.filter(pk=session.pk)).get()
        call = ToolCall.objects.create(
            operation_id=operation_id,
            agent=agent,
            session=locked,
            tool=tool,
            state=locked.state,
            revision=None,
            risk="destructive",
            input=MASKED_INPUT,
            input_digest="0" * 64,
            status=ToolCallStatus.AWAITING_APPROVAL,
        )
        call_await_approval(locked, call, agent=agent)
    return call

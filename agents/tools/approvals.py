"""A person's approval of a tool call in a state its contract names in ``needs_approval_in``.

- ``call_await_approval(session, call, *, agent)`` — called by the tool-call check, which holds the
  session's lock and has saved ``call`` with status ``awaiting_approval``: the session moves to its
  machine's handoff state (a ``Transition`` of kind ``approval``, the agent as actor, the reason
  ``approval_reason(call)``), so it waits in the human queue (reason ``approval``) with the proposed call.
- ``approval_decide(*, call_pk, user, approve, note)`` — a person approves (status ``approved``) or
  rejects (``rejected``, a note required) the call; the session moves back from the handoff state to the
  state the call was asked in (``call.state``), kind ``approval``, actor ``operator:<username>``, and a
  ``QueueEvent`` (approve / reject, with the note) goes on its timeline. The agent repeats its call with
  the same operation id: the check lets an approved call go ahead and refuses a rejected one.
- ``approval_decide_for_session`` — the same, for the call a queue item (a session) waits for: the staff
  API (``agents.tools.approval_apis``) and the queue page (``agents.tools.admin_approvals``) name sessions.
- ``proposed_calls`` — what the queue shows of the call a session waits for; registered in
  ``AgentsConfig.ready()`` on ``agents.queue.selectors.proposed_calls_asking`` (the queue is a room below
  this one and does not import it).

Invariants:
- A call is decided once. The decision is made under the session's lock (``sessions_lock``: row lock on
  PostgreSQL, the write lock on SQLite) and re-reads the call's status there, so of two people deciding at
  once exactly one wins; the other is told ``409 not_awaiting_approval``.
- A call is decided only while the session is still waiting for *it*: in the handoff state, brought there
  by the move ``call_await_approval`` wrote for this call (the move numbered with the session's ``seq``,
  kind ``approval``, reason ``approval_reason(call)``). A session an operator returned or resolved in the
  meantime, or one that went back to the queue for another reason, leaves the call undecidable
  (``not_awaiting_approval``): the move back would undo what the person did.
- The queue's claim rules hold: a session someone else has claimed is refused (``claimed_by_other``);
  an unclaimed one may be decided by whoever has the permission, as if claimed for that moment.
- Deciding needs ``agents.approve_tool_calls`` (an active staff user), checked here, whichever way it is
  asked for (the queue page or the staff API). The permission to work the queue is not needed.
- The move back is not one of the machine's transitions (the handoff state rarely leads back to where a
  call was asked): like a resume, it returns to where the session was. The interrupt stack is kept, as
  the session goes back to exactly where it was.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from agents.errors import UnknownSession
from agents.queue.models import QueueEvent, QueueEventKind
from agents.queue.services import _check_holder, operator_actor
from agents.sessions.handoff import REASON_APPROVAL, handoff_refusal
from agents.sessions.models import Session, Transition, TransitionKind
from agents.sessions.reads import sessions_lock
from agents.sessions.services import AgentRef, session_move
from agents.tools.errors import NotAwaitingApproval, UnknownOperation
from agents.tools.models import ToolCall, ToolCallStatus
from agents.webhooks.emit import webhook_event
from agents.webhooks.models import EventKind
from decision_service.errors import InvalidRequest, PermissionDenied

APPROVE_PERMISSION = "agents.approve_tool_calls"


def approval_reason(call: ToolCall) -> str:
    """The reason of the move into the handoff state for ``call``: it names the tool and the operation,
    and it is how a decision finds that the session still waits for this very call."""
    return f"{REASON_APPROVAL}: {call.tool} (operation {call.operation_id})"


def approval_allowed(user: Any) -> bool:
    return (
        bool(getattr(user, "is_active", False))
        and bool(getattr(user, "is_staff", False))
        and bool(user.has_perm(APPROVE_PERMISSION))
    )


def call_await_approval(session: Session, call: ToolCall, *, agent: AgentRef) -> None:
    """Move ``session`` (locked by the caller, in ``call.state``) into its machine's handoff state to wait
    for a person's decision on ``call`` (saved by the caller with status ``awaiting_approval``)."""
    if refused := handoff_refusal(session, attempted=f"a call of {call.tool}"):
        raise refused  # the check refuses handed-off sessions before it gets here
    session_move(
        session,
        to=session.machine.handoff_state,
        kind=TransitionKind.APPROVAL,
        actor=agent.name,
        reason=approval_reason(call),
    )
    _told(EventKind.TOOL_CALL_AWAITING_APPROVAL, session, call)


def _told(kind: str, session: Session, call: ToolCall) -> None:
    """The webhook event of a call waiting for, or settled by, a person (agents.webhooks)."""
    data = {
        "session_id": session.key,
        "operation_id": call.operation_id,
        "tool": call.tool,
        "state": call.state,
        "risk": call.risk,
        "status": call.status,
        "input": call.input,  # stored masked
    }
    if kind == EventKind.TOOL_CALL_DECIDED:
        data["decided_by"] = call.decided_by.get_username() if call.decided_by is not None else None
        data["note"] = call.decision_note
    webhook_event(kind, agent_id=session.agent_id, data=data)


def approval_waits_for(session: Session, call: ToolCall) -> bool:
    """Whether ``session`` still waits in the human queue for a decision on ``call`` (the move into the
    handoff state was ``call_await_approval``'s for this call): not after a return, a resolve or a new wait."""
    if session.state != session.machine.handoff_state or session.handoff_reason != REASON_APPROVAL:
        return False
    return Transition.objects.filter(
        session_id=session.pk, seq=session.seq, kind=TransitionKind.APPROVAL, reason=approval_reason(call)
    ).exists()


LAPSED_NOTE = "The session left the human queue without a decision on this call."


def approval_lapse(session: Session, call: ToolCall) -> bool:
    """Settle a call left waiting once its session no longer waits for it (an operator returned or
    resolved the session without deciding): it is rejected with ``LAPSED_NOTE`` and no one as decider, so
    the agent's repeat is told ``tool_call_rejected`` instead of waiting for a person nobody asks. The
    caller holds the session's lock. False while the session still waits for the call."""
    if approval_waits_for(session, call):
        return False
    call.status = ToolCallStatus.REJECTED
    call.decision_note = LAPSED_NOTE
    call.decided_at = timezone.now()
    call.save(update_fields=["status", "decision_note", "decided_at", "updated_at"])
    _told(EventKind.TOOL_CALL_DECIDED, session, call)
    return True


def _not_awaiting(session: Session, why: str) -> NotAwaitingApproval:
    return NotAwaitingApproval(why, extra={"state": session.state, "seq": session.seq})


def _check_asked(user: Any, *, approve: bool, note: str) -> None:
    if not approval_allowed(user):
        raise PermissionDenied(
            gettext("Approving and rejecting tool calls needs the agents.approve_tool_calls permission.")
        )
    if not approve and not note:
        message = gettext("Say why the call is rejected: the note is required.")
        raise InvalidRequest(message, errors={"note": [message]})


def _locked(session_pk: int) -> Session:
    # The lock comes before any other read of this transaction: on SQLite a transaction that read first
    # would decide on what it read before the winner's commit.
    session = sessions_lock(Session.objects.filter(pk=session_pk)).select_related("claimed_by").first()
    if session is None:
        raise UnknownSession(gettext("There is no session %(session)s.") % {"session": session_pk})
    return session


def approval_decide(*, call_pk: int, user: Any, approve: bool, note: str) -> ToolCall:
    """Approve or reject a call that waits for a person; the session goes back to the call's state."""
    note = note.strip()
    _check_asked(user, approve=approve, note=note)
    session_pk = ToolCall.objects.filter(pk=call_pk).values_list("session_id", flat=True).first()
    if session_pk is None:
        raise UnknownOperation(gettext("There is no tool call %(call)s.") % {"call": call_pk})
    with transaction.atomic():
        session = _locked(session_pk)
        # Read under the session's lock: whoever decided first has committed by now.
        call = ToolCall.objects.get(pk=call_pk)
        if call.status != ToolCallStatus.AWAITING_APPROVAL:
            raise _not_awaiting(
                session,
                gettext("The call %(operation)s is %(status)s: it does not wait for a decision.")
                % {"operation": call.operation_id, "status": call.status},
            )
        if not approval_waits_for(session, call):
            raise _not_awaiting(
                session,
                gettext(
                    "The session is in '%(state)s' and no longer waits for the call %(operation)s (it was "
                    "returned, resolved or moved since)."
                )
                % {"state": session.state, "operation": call.operation_id},
            )
        return _decide_locked(session, call, user=user, approve=approve, note=note)


def approval_decide_for_session(*, session_pk: int, user: Any, approve: bool, note: str) -> ToolCall:
    """``approval_decide`` for the call the session waits for (the staff API and the queue page name
    queue items, i.e. sessions). The permission is checked before anything about the session is told."""
    note = note.strip()
    _check_asked(user, approve=approve, note=note)
    with transaction.atomic():
        session = _locked(session_pk)
        call = _pending_call(session)
        if call is None:
            raise _not_awaiting(
                session,
                gettext("The session is in '%(state)s' and waits for no tool call's approval.")
                % {"state": session.state},
            )
        return _decide_locked(session, call, user=user, approve=approve, note=note)


def _decide_locked(session: Session, call: ToolCall, *, user: Any, approve: bool, note: str) -> ToolCall:
    _check_holder(session, user)
    now = timezone.now()
    event = QueueEvent(
        session=session,
        kind=QueueEventKind.APPROVE if approve else QueueEventKind.REJECT,
        actor=operator_actor(user),
        user=user,
        state=session.state,
        note=note,
    )
    event.full_clean()
    event.save()
    call.status = ToolCallStatus.APPROVED if approve else ToolCallStatus.REJECTED
    call.decided_by, call.decision_note, call.decided_at = user, note, now
    call.full_clean(exclude=["agent", "session"], validate_unique=False, validate_constraints=False)
    call.save(update_fields=["status", "decided_by", "decision_note", "decided_at", "updated_at"])
    verdict = "approved" if approve else "rejected"  # stored: not in the language of whoever decided
    session_move(
        session,
        to=call.state,
        kind=TransitionKind.APPROVAL,
        actor=operator_actor(user),
        reason=f"{call.tool} (operation {call.operation_id}) {verdict}" + (f": {note}" if note else ""),
        now=now,
    )
    _told(EventKind.TOOL_CALL_DECIDED, session, call)
    return call


def _pending_call(session: Session) -> ToolCall | None:
    pending = ToolCall.objects.filter(session_id=session.pk, status=ToolCallStatus.AWAITING_APPROVAL)
    return next((call for call in pending.order_by("-created_at", "-pk") if approval_waits_for(session, call)), None)


def approval_pending_call(*, session_pk: int) -> ToolCall | None:
    """The call a session waits for a person to decide, if any (a read: no lock)."""
    session = Session.objects.select_related("machine").filter(pk=session_pk).first()
    return _pending_call(session) if session is not None else None


def proposed_calls(*, sessions: list[Session], **_: Any) -> dict[int, dict[str, Any]]:
    """The call each of ``sessions`` (annotated by ``session_human_queue``: ``last_kind``, ``last_reason``)
    waits for, as the queue shows it: session pk → tool, masked input, operation id, risk, state. One read."""
    waiting = {
        s.pk: s.last_reason  # type: ignore[attr-defined]  # the queue selector's annotation
        for s in sessions
        if s.handoff_reason == REASON_APPROVAL and getattr(s, "last_kind", None) == TransitionKind.APPROVAL
    }
    if not waiting:
        return {}
    found: dict[int, dict[str, Any]] = {}
    calls = ToolCall.objects.filter(session_id__in=waiting, status=ToolCallStatus.AWAITING_APPROVAL)
    for call in calls.order_by("created_at", "pk"):
        if approval_reason(call) == waiting[call.session_id]:
            found[call.session_id] = {
                "id": call.pk,
                "operation_id": call.operation_id,
                "tool": call.tool,
                "input": call.input,  # stored masked
                "risk": call.risk,
                "state": call.state,
                "asked_at": call.created_at,
            }
    return found

"""The human queue as a work queue: a person claims a waiting session, releases it, returns it to the bot
or resolves it.

A session is *in the queue* while it is in its machine's handoff state. Claiming and releasing change
who holds it (``Session.claimed_by``) and leave a ``QueueEvent`` on its timeline; they are not moves, so
the state and ``seq`` stay as they are. Returning and resolving are moves (``Transition`` rows of kind
``return`` / ``resolve``) written by ``session_move`` under the session's lock, with the operator as
actor (``operator:<username>``); any move clears the claim. Only the machine's own transitions lead out
of the handoff state: a return goes to a non-terminal state the table allows from it (and the anomaly
count restarts, so the model gets a fresh allowance), a resolve to a terminal one.

A session held by someone else is refused (``claimed_by_other``); an unclaimed one may be returned or
resolved directly by whoever acts, as if claimed for that moment. A resolve needs a note (checked here, not
only by the admin and the serializer). Every step needs the
``agents.work_human_queue`` permission, whichever way it is asked for (admin page or staff API).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from agents.errors import ClaimedByOther, IllegalTransition, NotInQueue, UnknownSession
from agents.queue.models import QueueEvent, QueueEventKind
from agents.sessions.models import Session, TransitionKind
from agents.sessions.reads import sessions_lock
from agents.sessions.services import Move, _extra, session_allowed_targets, session_move
from decision_service.errors import InvalidRequest, PermissionDenied

QUEUE_PERMISSION = "agents.work_human_queue"

OPERATOR_PREFIX = "operator:"


def operator_actor(user: Any) -> str:
    """How a person appears as the actor of a transition or queue event."""
    return f"{OPERATOR_PREFIX}{user.get_username()}"


def queue_work_allowed(user: Any) -> bool:
    return bool(getattr(user, "is_active", False)) and bool(user.has_perm(QUEUE_PERMISSION))


def _locked_in_queue(session_pk: int, user: Any) -> Session:
    if not queue_work_allowed(user):
        raise PermissionDenied(gettext("Working the human queue needs the agents.work_human_queue permission."))
    session = sessions_lock(Session.objects.filter(pk=session_pk)).select_related("claimed_by").first()
    if session is None:
        raise UnknownSession(gettext("There is no session %(session)s.") % {"session": session_pk})
    if session.state != session.machine.handoff_state:
        raise NotInQueue(
            gettext(
                "The session is in '%(state)s', not in its machine's handoff state '%(handoff)s': "
                "it is not waiting for a person."
            )
            % {"state": session.state, "handoff": session.machine.handoff_state},
            extra={"state": session.state, "seq": session.seq},
        )
    return session


def _check_holder(session: Session, user: Any) -> None:
    if session.claimed_by_id is not None and session.claimed_by_id != user.pk:
        holder = session.claimed_by.get_username() if session.claimed_by else gettext("someone else")
        raise ClaimedByOther(
            gettext("%(holder)s has this session; they may release it.") % {"holder": holder},
            extra={"claimed_by": holder, "state": session.state, "seq": session.seq},
        )


def _event(session: Session, *, kind: str, user: Any, note: str = "") -> None:
    event = QueueEvent(
        session=session, kind=kind, actor=operator_actor(user), user=user, state=session.state, note=note
    )
    event.full_clean()
    event.save()


@transaction.atomic
def queue_claim(*, session_pk: int, user: Any, note: str = "") -> Session:
    """Assign a waiting session to ``user``. Claiming one's own session again changes nothing."""
    session = _locked_in_queue(session_pk, user)
    _check_holder(session, user)
    if session.claimed_by_id == user.pk:
        return session
    now = timezone.now()
    Session.objects.filter(pk=session.pk).update(claimed_by=user, claimed_at=now, updated_at=now)
    session.claimed_by, session.claimed_at, session.updated_at = user, now, now
    _event(session, kind=QueueEventKind.CLAIM, user=user, note=note)
    return session


@transaction.atomic
def queue_release(*, session_pk: int, user: Any, note: str = "") -> Session:
    """Give a claimed session back to the queue, unclaimed. Only its holder may; releasing an unclaimed
    session changes nothing."""
    session = _locked_in_queue(session_pk, user)
    _check_holder(session, user)
    if session.claimed_by_id is None:
        return session
    now = timezone.now()
    Session.objects.filter(pk=session.pk).update(claimed_by=None, claimed_at=None, updated_at=now)
    session.claimed_by, session.claimed_at, session.updated_at = None, None, now
    _event(session, kind=QueueEventKind.RELEASE, user=user, note=note)
    return session


def _leave(session: Session, *, to: str, terminal: bool) -> None:
    machine = session.machine
    allowed = session_allowed_targets(session)
    fits = [s for s in allowed if (s in machine.terminal_states) == terminal]
    if to not in fits:
        refused = (
            gettext("'%(from)s' → '%(to)s' is not a terminal state to resolve in; allowed: %(allowed)s.")
            if terminal
            else gettext("'%(from)s' → '%(to)s' is not a non-terminal state to return to; allowed: %(allowed)s.")
        )
        raise IllegalTransition(
            refused % {"from": session.state, "to": to, "allowed": ", ".join(fits) or gettext("none")},
            extra=_extra(session, allowed_transitions=fits),
        )


@transaction.atomic
def queue_return(*, session_pk: int, user: Any, state: str, note: str = "") -> Move:
    """Hand a waiting session back to the bot in ``state`` (a non-terminal state the machine allows from
    its handoff state). The anomaly count restarts at zero."""
    session = _locked_in_queue(session_pk, user)
    _check_holder(session, user)
    _leave(session, to=state, terminal=False)
    # The interrupt stack goes: what the agent meant to resume before the handoff is not the person's
    # decision, and a resume must not undo the state they returned the session to.
    move = session_move(
        session, to=state, kind=TransitionKind.RETURN, actor=operator_actor(user), reason=note, stack=[]
    )
    Session.objects.filter(pk=session.pk).update(anomaly_count=0)
    session.anomaly_count = 0
    return move


@transaction.atomic
def queue_resolve(*, session_pk: int, user: Any, state: str, note: str) -> Move:
    """End a waiting session in ``state`` (a terminal state the machine allows from its handoff state),
    with the operator's note as the move's reason: required, as what a person did to end it."""
    if not note.strip():
        message = gettext("Say how it was resolved: the note is required.")
        raise InvalidRequest(message, errors={"note": [message]})
    session = _locked_in_queue(session_pk, user)
    _check_holder(session, user)
    _leave(session, to=state, terminal=True)
    return session_move(
        session, to=state, kind=TransitionKind.RESOLVE, actor=operator_actor(user), reason=note, stack=[]
    )

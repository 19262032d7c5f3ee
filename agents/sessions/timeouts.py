"""The timeout sweep: sessions that stayed too long in a state with a timeout go to their machine's
handoff state (a person's queue). Run every few seconds by Celery beat (``agents.tasks``)."""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from agents.sessions.codes import SYSTEM_TIMEOUT
from agents.sessions.models import Session, TransitionKind
from agents.sessions.reads import sessions_lock
from agents.sessions.services import session_move
from rules.models import StateMachine


def session_timeouts_sweep(*, now: dt.datetime | None = None) -> int:
    """Hand every session that has stayed too long in a state with a timeout to its machine's handoff
    state. Safe to run again and concurrently: each session is re-checked under its lock."""
    now = now or timezone.now()
    moved = 0
    for machine in StateMachine.objects.exclude(timeouts={}):
        for state, seconds in machine.timeouts.items():
            if state == machine.handoff_state or state in machine.terminal_states:
                continue
            cutoff = now - dt.timedelta(seconds=float(seconds))
            due = Session.objects.filter(machine=machine, state=state, state_entered_at__lte=cutoff)
            for pk in due.values_list("pk", flat=True).iterator():
                with transaction.atomic():
                    session = sessions_lock(Session.objects.filter(pk=pk)).first()
                    if session is None or session.state != state or session.state_entered_at > cutoff:
                        continue  # moved on meanwhile
                    session_move(
                        session,
                        to=machine.handoff_state,
                        kind=TransitionKind.TIMEOUT,
                        actor=SYSTEM_TIMEOUT,
                        reason=f"timeout: more than {seconds:g} s in {state}",
                        now=now,
                    )
                    moved += 1
    return moved

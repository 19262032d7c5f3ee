"""``PATCH /sessions/<id>/fields``: a session's fields set (or cleared) on their own, as a move of kind
``fields`` that stays in its state. The invariants are ``agents.sessions.field_updates``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.sessions.field_updates import FieldsApplied, fields_apply
from agents.sessions.keys import WriteKey, keyed
from agents.sessions.models import Session, TransitionKind
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.services import (
    AgentRef,
    _closed,
    _digest,
    _locked,
    _mismatch,
    session_handed_off,
    session_move,
)
from decision_service.errors import DomainError


@dataclass(frozen=True)
class FieldsUpdated:
    """A fields write: the session after it and which normalisers changed which value."""

    session: SessionState
    normalised: dict[str, list[str]]


def session_fields_update(
    *,
    agent: AgentRef,
    session_id: str,
    expected_state: str,
    updates: Mapping[str, Any],
    idempotency_key: str = "",
) -> FieldsUpdated:
    """Set (or, with ``null``, clear) some of the session's fields if it is in ``expected_state``."""
    key = WriteKey(
        agent.pk,
        idempotency_key,
        "fields",
        _digest({"expected_state": expected_state, "updates": dict(updates)}),
        session_id,
    )

    def attempt() -> FieldsUpdated:
        with transaction.atomic():
            session = _locked(agent, session_id)
            if (earlier := key.earlier()) is not None:
                return FieldsUpdated(session=session_state(session), normalised=earlier["normalised"])
            outcome = _update_locked(session, agent, expected_state, updates)
            if not isinstance(outcome, DomainError):
                key.store(seq=session.seq, normalised=outcome.normalised)
                return FieldsUpdated(session=session_state(session), normalised=outcome.normalised)
        raise outcome  # after the commit: a refused value's anomaly is kept

    return keyed(attempt)


def _update_locked(
    session: Session, agent: AgentRef, expected_state: str, updates: Mapping[str, Any]
) -> FieldsApplied | DomainError:
    if session.state != expected_state:
        return _mismatch(session, expected_state)
    if session.state in session.machine.terminal_states:
        return _closed(session)
    if handed_off := session_handed_off(session, agent, "a fields update"):
        return handed_off
    applied = fields_apply(session=session, agent=agent, updates=updates)
    if isinstance(applied, DomainError) or not applied.changed:
        return applied  # a refusal, or nothing changed: nothing written
    session_move(session, to=session.state, kind=TransitionKind.FIELDS, actor=agent.name, **applied.move_fields())
    return applied

"""Writing a session's fields: with a move (``fields_apply``, inside the mover's lock) or on their own
(``session_fields_update``, ``PATCH /sessions/<id>/fields``). Storage: ``agents.sessions.fields``.

Invariants (with ``agents.sessions.services``' own, which hold here too):
- **All or nothing.** Every update is checked before anything is written; one bad value refuses them
  all (``422 invalid_fields``, an error per field), and a move with updates is made with them or not at
  all.
- **A state's requirements hold on the way in.** A move into a state whose ``required_in`` fields are
  missing or invalid — after the move's own updates — is refused (``422 fields_missing``), nothing
  written. Checked by every agent's way into a state (a move, an interrupt, a resume, a decide's mapped
  move, which stays instead). Exempt: moves into the handoff state (the timeout sweep, the
  model-failure policy: a person must be able to take any session) and a person's queue actions (return,
  resolve: the operator is the authority the requirement would protect).
- **A fields write is a move.** A patch that changes something is a move of kind ``fields`` that stays
  in its state (``seq`` + 1, its row in the timeline with what changed, the state's timeout not
  restarted); a patch that changes nothing writes nothing. So the compare-and-set on ``seq`` orders
  field writes and moves alike, and a runtime's ``seq`` names one version of state *and* fields.
- **A refused value is the model's.** A value the declaration refuses is recorded as an anomaly
  ``field_invalid`` and counts toward the machine's ``max_anomalies``, whoever typed it: a runtime sends
  what its model extracted, and seed 003 §3.3 gives the model a bounded number of refused tries before a
  person takes over. Its detail names the field and what was wrong; a ``pii`` field's value never.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.errors import FieldsMissing, InvalidFields
from agents.sessions.codes import FIELD_INVALID
from agents.sessions.fields import fields_check, fields_masked, fields_missing_in, machine_field_specs
from agents.sessions.models import Session
from agents.sessions.moves import AgentRef, _extra, anomaly_record
from decision_service.errors import DomainError


@dataclass(frozen=True)
class FieldsApplied:
    """Updates checked for one move: pass ``move_fields()`` to ``session_move``."""

    values: dict[str, Any]
    changed: dict[str, Any]
    masked: dict[str, Any]  # ``changed`` as the move's row records it
    normalised: dict[str, list[str]]

    def move_fields(self) -> dict[str, Any]:
        if not self.changed:
            return {}
        return {"field_values": self.values, "fields_changed": self.masked}


def fields_missing_refusal(
    session: Session, state: str, values: Mapping[str, Any] | None = None
) -> FieldsMissing | None:
    """The refusal of a move of ``session`` into ``state`` (with the fields ``values``, by default its
    own) when ``state`` requires fields it lacks; ``None`` when nothing is missing."""
    missing = fields_missing_in(session.machine, session.field_values if values is None else values, state)
    if not missing:
        return None
    return FieldsMissing(
        f"'{state}' requires the fields {', '.join(missing)}; set them (updates, or PATCH …/fields) and retry.",
        errors={name: [f"Required to enter '{state}'."] for name in missing},
        extra=_extra(session, missing=missing),
    )


def fields_apply(
    *, session: Session, agent: AgentRef, updates: Mapping[str, Any] | None, entering: str | None = None
) -> FieldsApplied | DomainError:
    """Check ``updates`` for a move the caller makes under the session's lock, into ``entering`` (or, for
    a fields write, within the current state): the fields to write, or the refusal to return.

    Writes nothing but the ``field_invalid`` anomaly (committed with the refusal, as every anomaly is).
    With no updates it still checks ``entering``'s required fields. ``null`` clears a field."""
    checked = fields_check(session.machine, session.field_values, updates or {})
    if checked.errors:
        specs = machine_field_specs(session.machine)
        detail = "; ".join(
            f"{name}: {checked.problem_codes[name] if name in specs and specs[name].pii else messages[0]}"
            for name, messages in checked.errors.items()
        )
        handoff = anomaly_record(session, agent=agent, session_id=session.key, code=FIELD_INVALID, detail=detail)
        return InvalidFields(
            f"Some field values were refused: {', '.join(checked.errors)}; nothing was written.",
            errors=checked.errors,
            extra=_extra(session, handed_off=handoff is not None),
        )
    if entering is not None and (refusal := fields_missing_refusal(session, entering, checked.values)):
        return refusal
    if entering is None:
        # A write within the state may not clear (or leave invalid) what the state itself requires.
        cleared = [n for n in fields_missing_in(session.machine, checked.values, session.state) if n in checked.changed]
        if cleared:
            return FieldsMissing(
                f"'{session.state}' requires {', '.join(cleared)}: they cannot be cleared here.",
                errors={name: [f"Required in '{session.state}'."] for name in cleared},
                extra=_extra(session, missing=cleared),
            )
    return FieldsApplied(
        values=checked.values,
        changed=checked.changed,
        masked=fields_masked(session.machine, checked.changed),
        normalised=checked.normalised,
    )

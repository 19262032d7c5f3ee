"""A session's fields: the typed data its machine declares (``StateMachine.fields``), as a session holds it.

Storage. The values live in one JSON column of the session's own row (``Session.field_values``), not in
a table of their own: every answer about a session carries them (with ``missing``), and the decide path
reads that row already — a table would cost every decide a statement (counted in
tests/agents/sessions/api/test_decide_round_trips.py). The column is not free JSON: it holds only
values ``field_value_check`` accepted against the machine's declaration (the checked value, after any
normaliser the declaration asked for), and only a move writes it — ``agents.sessions.field_updates``
checks, ``agents.sessions.services.session_move`` writes, under the session's lock, in the move's own
compare-and-set on ``seq``. What changed and when is the move's row: ``Transition.fields_changed``,
personal data (``pii``) masked as the decision log masks a fact path (``rules.engine.masking.WHOLE``).
The free, unchecked data a runtime keeps is ``Session.context``, apart.

This module only reads (no writes, no refusals): the machine's specs, what an update would do, what a
state requires that is missing. The presenter and the services both use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rules.engine.field_values import FieldSpec, field_specs, field_value_check, missing_fields
from rules.engine.masking import WHOLE
from rules.models import StateMachine

_SPECS_ATTR = "_arbiter_field_specs"
NUL_MESSAGE = "must not contain NUL characters"


def machine_field_specs(machine: StateMachine) -> dict[str, FieldSpec]:
    """The machine's declarations by name, in declaration order; read once per machine object."""
    found: dict[str, FieldSpec] | None = getattr(machine, _SPECS_ATTR, None)
    if found is None:
        found = {spec.name: spec for spec in field_specs(machine.fields or [])}
        setattr(machine, _SPECS_ATTR, found)
    return found


def fields_missing_in(machine: StateMachine, values: Mapping[str, Any], state: str) -> list[str]:
    """The fields ``state`` requires (``required_in``) that ``values`` lacks or holds invalid."""
    specs = machine_field_specs(machine)
    if not specs:
        return []
    return list(missing_fields(tuple(specs.values()), values, state))


def fields_missing_next(
    machine: StateMachine, values: Mapping[str, Any], states: Iterable[str]
) -> dict[str, list[str]]:
    """``{state: [missing fields]}`` for each of ``states`` that lacks something (``{}``: nothing missing)."""
    if not machine_field_specs(machine):
        return {}
    missing = {state: fields_missing_in(machine, values, state) for state in dict.fromkeys(states)}
    return {state: names for state, names in missing.items() if names}


def fields_masked(machine: StateMachine, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as staff and the timeline see them: a ``pii`` field's value replaced whole (a cleared
    field stays ``None``: that it was cleared is no personal data)."""
    specs = machine_field_specs(machine)
    return {
        name: WHOLE if value is not None and name in specs and specs[name].pii else value
        for name, value in values.items()
    }


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


@dataclass(frozen=True)
class FieldsChecked:
    """What ``updates`` would make of a session's fields: the values after them, what changed (``None``:
    cleared), which normalisers changed which value, and the problems (field → messages; empty when fine)."""

    values: dict[str, Any]
    changed: dict[str, Any]
    normalised: dict[str, list[str]]
    errors: dict[str, list[str]]
    problem_codes: dict[str, str]


def fields_check(machine: StateMachine, current: Mapping[str, Any], updates: Mapping[str, Any]) -> FieldsChecked:
    """Check every update against the machine's declarations; pure, all of them (every problem is named).

    ``null`` clears a field. An undeclared name is refused. A value is taken in its declared type or
    refused (``rules.engine.field_values``: strict types, normalising only when declared)."""
    specs = machine_field_specs(machine)
    values = dict(current)
    changed: dict[str, Any] = {}
    normalised: dict[str, list[str]] = {}
    errors: dict[str, list[str]] = {}
    codes: dict[str, str] = {}
    for name, raw in updates.items():
        spec = specs.get(name)
        if spec is None:
            errors[name] = [f"{machine.key} declares no field '{name}'."]
            codes[name] = "unknown"
            continue
        if raw is None:
            if values.pop(name, None) is not None:
                changed[name] = None
            continue
        if _holds_nul(raw):  # PostgreSQL cannot store NUL in JSON: refused here, not as a server error
            errors[name], codes[name] = [f"The value {NUL_MESSAGE}."], "nul"
            continue
        check = field_value_check(spec, raw)
        if check.problem is not None:
            errors[name], codes[name] = (
                [check.problem.message[:1].upper() + check.problem.message[1:] + "."],
                check.problem.code,
            )
            continue
        if check.normalised_by:
            normalised[name] = list(check.normalised_by)
        if name not in values or values[name] != check.value or type(values[name]) is not type(check.value):
            changed[name] = check.value
        values[name] = check.value
    return FieldsChecked(values=values, changed=changed, normalised=normalised, errors=errors, problem_codes=codes)

"""A state machine's field declarations as plain data, and their validation. No database; messages go
through gettext.

``machine_field_problems`` is to ``StateMachine.fields`` what ``machine_problems`` is to the rest of the
machine: one pure function the model's ``clean()``, the admin form and the YAML checker all call. Its
problems are located (``FieldAt``: the index of the declaration and the key in it) so the YAML checker
can give each one its line; the model joins them into messages on the ``fields`` field.

What a declared field's *values* may be is ``rules.engine.field_values`` (pure, no Django): a declared
``default`` is checked there, with the same answer the sessions will get.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext

from rules.config.validators import KEY as _KEY
from rules.engine.field_values import (
    CONSTRAINTS_FOR_TYPE,
    FIELD_TYPES,
    NORMALIZERS_FOR_TYPE,
    field_spec,
    field_value_check,
)

# Every key a declaration may have, in the order export writes them.
FIELD_KEYS = (
    "name",
    "type",
    "description",
    "pattern",
    "min",
    "max",
    "min_length",
    "max_length",
    "enum",
    "schema",
    "default",
    "required_in",
    "pii",
    "normalize",
)
# Where a problem is: () for the whole list, (index,) for one declaration, (index, key) for one key of it.
FieldAt = tuple[int | str, ...]


def canonical_field(declaration: Mapping[str, Any]) -> dict[str, Any]:
    """A declaration as it is stored and exported: keys in ``FIELD_KEYS`` order, what is left at its
    default (nothing, ``pii: false``, an empty list or description) left out."""
    return {key: declaration[key] for key in FIELD_KEYS if key in declaration and not _left_out(declaration[key])}


def _left_out(value: Any) -> bool:
    # By identity and type, not ``in (None, False, [], "")``: 0 == False, and min: 0 must be kept.
    return value is None or value is False or (isinstance(value, list | str) and not value)


def machine_field_problems(
    *, fields: Any, states: Sequence[str], closed_states: Sequence[str] = ()
) -> dict[FieldAt, str]:
    """Every reason the declarations cannot be used, located; empty when they are sound.

    ``states`` are the machine's states (``required_in`` must name them); ``closed_states`` the ones a
    session must always be able to enter whatever it holds — where it starts and where a person takes over
    — so no field may be required to enter them.
    """
    if not isinstance(fields, list):
        return {(): gettext("Give the fields as a list of declarations.")}
    problems: dict[FieldAt, str] = {}
    seen: dict[str, int] = {}
    for index, declaration in enumerate(fields):
        if not isinstance(declaration, Mapping):
            problems[(index,)] = gettext("Declare each field as a mapping with at least a name and a type.")
            continue
        for key, message in field_declaration_problems(declaration, states=states, closed_states=closed_states).items():
            problems[(index, key)] = message
        name = declaration.get("name")
        if isinstance(name, str):
            if name in seen:
                problems[(index, "name")] = gettext("The field %(name)s is declared twice.") % {"name": name}
            seen.setdefault(name, index)
    return problems


def field_declaration_problems(
    declaration: Mapping[str, Any], *, states: Sequence[str], closed_states: Sequence[str] = ()
) -> dict[str, str]:
    """One declaration's problems, keyed by the declaration's key."""
    problems: dict[str, str] = {}
    for key in declaration:
        if key not in FIELD_KEYS:
            problems[str(key)] = gettext("Unknown key %(key)s (expected one of: %(keys)s).") % {
                "key": key,
                "keys": ", ".join(FIELD_KEYS),
            }
    name, kind = declaration.get("name"), declaration.get("type")
    if not isinstance(name, str) or not _KEY.fullmatch(name):
        problems["name"] = gettext(
            "Name the field with a key: lower-case letters, digits and underscores, starting with a letter."
        )
    if kind not in FIELD_TYPES:
        problems["type"] = gettext("The type must be one of %(types)s.") % {"types": ", ".join(FIELD_TYPES)}
        return problems
    problems.update(_constraint_problems(declaration, kind))
    problems.update(_state_problems(declaration, states, closed_states))
    if not isinstance(declaration.get("description", ""), str):
        problems["description"] = gettext("The description must be text.")
    if not isinstance(declaration.get("pii", False), bool):
        problems["pii"] = gettext("Write pii as true or false.")
    problems.update(_normalize_problems(declaration, kind))
    if not problems and declaration.get("default") is not None:
        problems.update(_default_problems(declaration))
    return problems


def _constraint_problems(declaration: Mapping[str, Any], kind: str) -> dict[str, str]:
    problems: dict[str, str] = {}
    allowed = CONSTRAINTS_FOR_TYPE[kind]
    for key in ("pattern", "min", "max", "min_length", "max_length", "enum", "schema"):
        if declaration.get(key) is not None and key not in allowed:
            problems[key] = gettext("A field of type %(type)s cannot have %(key)s.") % {"type": kind, "key": key}
    if "pattern" not in problems and declaration.get("pattern") is not None:
        pattern = declaration["pattern"]
        try:
            re.compile(pattern)
        except (re.error, TypeError) as error:
            problems["pattern"] = gettext("Not a valid regular expression: %(error)s.") % {"error": error}
    for low, high, integral in (("min", "max", kind == "integer"), ("min_length", "max_length", True)):
        bounds = [declaration.get(low), declaration.get(high)]
        for key, bound in zip((low, high), bounds, strict=True):
            if key in problems or bound is None:
                continue
            if (
                isinstance(bound, bool)
                or not isinstance(bound, int | float)
                or (integral and not isinstance(bound, int))
            ):
                problems[key] = gettext("Give a whole number.") if integral else gettext("Give a number.")
            elif low.endswith("_length") and bound < 0:
                problems[key] = gettext("A length cannot be negative.")
        lowest, highest = bounds
        if not ({low, high} & problems.keys()) and lowest is not None and highest is not None and lowest > highest:
            problems[high] = gettext("%(high)s must not be less than %(low)s.") % {"high": high, "low": low}
    if kind == "enum":
        values = declaration.get("enum")
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            problems["enum"] = gettext("List the values an enum field may take (at least one, each text).")
        elif len(set(values)) != len(values):
            problems["enum"] = gettext("Each value of the enum may be listed once.")
    schema = declaration.get("schema")
    if "schema" not in problems and schema is not None and (message := _schema_problem(schema, kind)):
        problems["schema"] = message
    return problems


def _schema_problem(schema: Any, kind: str) -> str | None:
    import jsonschema

    if not isinstance(schema, Mapping):
        return gettext("Give the JSON Schema as a mapping.")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as error:
        return gettext("Not a valid JSON Schema: %(error)s.") % {"error": error.message}
    declared = schema.get("type")
    if declared is not None and declared != kind:
        return gettext("The schema's type %(schema)s is not the field's type %(type)s.") % {
            "schema": declared,
            "type": kind,
        }
    return None


def _state_problems(declaration: Mapping[str, Any], states: Sequence[str], closed: Sequence[str]) -> dict[str, str]:
    required_in = declaration.get("required_in")
    if required_in is None:
        return {}
    if not isinstance(required_in, list) or not all(isinstance(s, str) for s in required_in):
        return {"required_in": gettext("List the states the field is required in.")}
    if len(set(required_in)) != len(required_in):
        return {"required_in": gettext("Each state may be listed once.")}
    unknown = [s for s in required_in if s not in states]
    if unknown:
        return {"required_in": gettext("Not a state of the machine: %(states)s.") % {"states": ", ".join(unknown)}}
    blocked = [s for s in required_in if s in closed]
    if blocked:
        return {
            "required_in": gettext(
                "A session must always be able to enter %(states)s (where it starts, or where a person takes over); "
                "no field can be required there."
            )
            % {"states": ", ".join(blocked)}
        }
    return {}


def _normalize_problems(declaration: Mapping[str, Any], kind: str) -> dict[str, str]:
    normalize = declaration.get("normalize")
    if normalize is None:
        return {}
    if not isinstance(normalize, list) or not all(isinstance(n, str) for n in normalize):
        return {"normalize": gettext("List the normalisers to apply, e.g. [digits].")}
    if len(set(normalize)) != len(normalize):
        return {"normalize": gettext("Each normaliser may be listed once.")}
    allowed = NORMALIZERS_FOR_TYPE[kind]
    wrong = [n for n in normalize if n not in allowed]
    if wrong:
        return {
            "normalize": gettext("A field of type %(type)s can be normalised with: %(allowed)s; not %(wrong)s.")
            % {"type": kind, "allowed": ", ".join(sorted(allowed)) or gettext("nothing"), "wrong": ", ".join(wrong)}
        }
    return {}


def _default_problems(declaration: Mapping[str, Any]) -> dict[str, str]:
    check = field_value_check(field_spec(declaration), declaration["default"])
    if check.problem is not None:
        return {
            "default": gettext("The default is not a value of the field: %(problem)s.")
            % {"problem": check.problem.message}
        }
    if check.normalised_by:
        # A default is written by staff, not sent by a model: it is given as the field stores it.
        return {
            "default": gettext("Write the default as the field stores it: %(value)s.") % {"value": repr(check.value)}
        }
    return {}

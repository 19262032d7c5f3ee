"""A state machine's field declarations: the pure validator, the model, history and the revision snapshot."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from rules.config.field_definitions import canonical_field, machine_field_problems
from rules.config.machines import machine_save
from rules.config.selectors import revision_latest
from rules.models import StateMachine

STATES = ["awaiting_phone", "phone_verified", "handoff", "done"]
PHONE = {
    "name": "phone",
    "type": "string",
    "pattern": r"^1[3-9]\d{9}$",
    "normalize": ["digits"],
    "required_in": ["phone_verified"],
    "pii": True,
}
RETRY = {"name": "retry_count", "type": "integer", "min": 0, "max": 3, "default": 0}
MACHINE = {
    "states": STATES,
    "initial_state": "awaiting_phone",
    "handoff_state": "handoff",
    "terminal_states": ["done"],
    "transitions": {"awaiting_phone": ["phone_verified", "handoff"], "phone_verified": ["done", "handoff"]},
}


def problems(*fields, closed=("awaiting_phone", "handoff")):
    return machine_field_problems(fields=list(fields), states=STATES, closed_states=list(closed))


def test_the_seed_declarations_are_sound():
    assert problems(PHONE, RETRY) == {}
    assert problems() == {}


@pytest.mark.parametrize(
    ("declaration", "at", "message"),
    [
        ({"type": "string"}, "name", "Name the field with a key"),
        ({"name": "Phone", "type": "string"}, "name", "Name the field with a key"),
        ({"name": "x", "type": "phone"}, "type", "The type must be one of string, integer"),
        ({"name": "x", "type": "string", "colour": "red"}, "colour", "Unknown key colour"),
        ({"name": "x", "type": "integer", "pattern": r"\d"}, "pattern", "A field of type integer cannot have pattern"),
        ({"name": "x", "type": "string", "pattern": "("}, "pattern", "Not a valid regular expression"),
        ({"name": "x", "type": "string", "min": 1}, "min", "cannot have min"),
        ({"name": "x", "type": "integer", "min": 3, "max": 1}, "max", "max must not be less than min"),
        ({"name": "x", "type": "integer", "min": 0.5}, "min", "Give a whole number"),
        ({"name": "x", "type": "string", "max_length": -1}, "max_length", "A length cannot be negative"),
        ({"name": "x", "type": "enum"}, "enum", "List the values an enum field may take"),
        ({"name": "x", "type": "enum", "enum": []}, "enum", "List the values an enum field may take"),
        ({"name": "x", "type": "enum", "enum": ["a", "a"]}, "enum", "listed once"),
        ({"name": "x", "type": "string", "enum": ["a"]}, "enum", "cannot have enum"),
        ({"name": "x", "type": "array", "schema": {"type": 5}}, "schema", "Not a valid JSON Schema"),
        ({"name": "x", "type": "array", "schema": {"type": "object"}}, "schema", "is not the field's type array"),
        ({"name": "x", "type": "string", "schema": {}}, "schema", "cannot have schema"),
        ({"name": "x", "type": "string", "required_in": ["nowhere"]}, "required_in", "Not a state of the machine"),
        ({"name": "x", "type": "string", "required_in": ["handoff"]}, "required_in", "must always be able to enter"),
        ({"name": "x", "type": "string", "required_in": "done"}, "required_in", "List the states"),
        ({"name": "x", "type": "string", "pii": "yes"}, "pii", "true or false"),
        ({"name": "x", "type": "integer", "normalize": ["digits"]}, "normalize", "can be normalised with: nothing"),
        ({"name": "x", "type": "string", "normalize": ["date"]}, "normalize", "digits, trim; not date"),
        ({"name": "x", "type": "string", "normalize": "digits"}, "normalize", "List the normalisers"),
        ({**RETRY, "default": 4}, "default", "The default is not a value of the field: 4 is more than the maximum"),
        ({**PHONE, "default": 13800138000}, "default", "expected text"),
        ({**PHONE, "required_in": [], "default": "138-0013-8000"}, "default", "Write the default as the field stores"),
    ],
)
def test_each_problem_is_located_at_its_key(declaration, at, message):
    found = problems(declaration)
    assert message in found[(0, at)], found


def test_names_are_unique_and_entries_are_mappings():
    assert problems(PHONE, {**PHONE})[(1, "name")] == "The field phone is declared twice."
    assert (0,) in problems("phone")
    assert machine_field_problems(fields={"phone": PHONE}, states=STATES) == {
        (): "Give the fields as a list of declarations."
    }


def test_the_canonical_form_keeps_zero_and_drops_what_is_default():
    assert canonical_field({"pii": False, "type": "integer", "name": "n", "min": 0, "default": 0, "normalize": []}) == {
        "name": "n",
        "type": "integer",
        "min": 0,
        "default": 0,
    }


@pytest.mark.django_db
def test_a_machine_keeps_its_fields_in_history_and_in_the_revision(actor):
    machine = machine_save(
        machine=StateMachine(key="phone_orders", **MACHINE, fields=[PHONE, RETRY]), actor=actor, reason="fields"
    )
    machine.refresh_from_db()
    assert machine.fields == [PHONE, RETRY]
    assert machine.history.latest().fields == [PHONE, RETRY]
    snapshot = revision_latest().snapshot
    (machine_doc,) = [m for m in snapshot["machines"] if m["key"] == "phone_orders"]
    assert machine_doc["fields"] == [canonical_field(PHONE), canonical_field(RETRY)]


@pytest.mark.django_db
def test_the_model_refuses_bad_declarations_naming_the_field(actor):
    bad = [{**PHONE, "pattern": "("}, {"name": "retry_count", "type": "integr"}, "oops"]
    with pytest.raises(ValidationError) as error:
        machine_save(machine=StateMachine(key="phone_orders", **MACHINE, fields=bad), actor=actor, reason="bad")
    messages = error.value.message_dict["fields"]
    assert any(m.startswith("phone pattern: Not a valid regular expression") for m in messages)
    assert any(m.startswith("retry_count type: The type must be one of") for m in messages)
    assert any(m.startswith("field 3: Declare each field as a mapping") for m in messages)
    assert not StateMachine.objects.filter(key="phone_orders").exists()

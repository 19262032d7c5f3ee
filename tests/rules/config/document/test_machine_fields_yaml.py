"""The ``fields:`` block of a machine in the configuration document: checked with line numbers, pure."""

from __future__ import annotations

from rules.config.document.validate import config_from_yaml, config_problems

# Line numbers matter below.
DOC = """\
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: phone_orders
    states: [awaiting_phone, phone_verified, handoff]
    initial: awaiting_phone
    handoff: handoff
    transitions:
      awaiting_phone: [phone_verified, handoff]
      phone_verified: [handoff]
    fields:
      - name: phone
        type: string
        pattern: '^1[3-9]\\d{9}$'
        normalize: [digits]
        required_in: [phone_verified]
        pii: true
      - name: retry_count
        type: integer
        min: 0
        max: 3
        default: 0
"""


def test_the_seed_fields_read_in_canonical_form():
    (machine,) = config_from_yaml(DOC)["machines"]
    assert machine["fields"] == [
        {
            "name": "phone",
            "type": "string",
            "pattern": r"^1[3-9]\d{9}$",
            "required_in": ["phone_verified"],
            "pii": True,
            "normalize": ["digits"],
        },
        {"name": "retry_count", "type": "integer", "min": 0, "max": 3, "default": 0},
    ]


def test_a_machine_without_fields_has_none_in_its_document():
    text = DOC.split("    fields:")[0]
    assert "fields" not in config_from_yaml(text)["machines"][0]
    assert config_problems(text + "    fields: null\n") == []


def test_each_problem_names_its_path_and_line():
    text = (
        DOC.replace("max: 3", "max: 3.5")
        .replace("required_in: [phone_verified]", "required_in: [phone_verified, handoff]")
        .replace("default: 0", "default: 0\n      - name: phone\n        type: number\n        normalize: [digits]")
    )
    assert config_problems(text) == [
        "machines[0].fields[0].required_in: a session must always be able to enter handoff (where it starts, or "
        "where a person takes over); no field can be required there (line 18)",
        "machines[0].fields[1].max: give a whole number (line 23)",
        "machines[0].fields[2].name: the field phone is declared twice (line 25)",
        "machines[0].fields[2].normalize: a field of type number can be normalised with: nothing; not digits (line 27)",
    ]


def test_fields_must_be_a_list():
    assert config_problems(DOC.split("    fields:")[0] + "    fields: {phone: string}\n") == [
        "machines[0].fields: expected a list, got a mapping (line 13)"
    ]

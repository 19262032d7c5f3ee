"""``session_field`` and ``session_keyword_seen`` in a YAML document: each problem at its path and line."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml, config_problems
from tests.support.session_rules import SESSION_RULES_YAML

RULES = "points[0].rules"


def test_the_session_rules_document_is_valid_and_canonical():
    assert config_problems(SESSION_RULES_YAML) == []
    rules = {r["key"]: r for r in config_from_yaml(SESSION_RULES_YAML)["points"][0]["rules"]}
    assert rules["complained_before"]["conditions"][0] == {"session_keyword_seen": "complaint", "last": 3}
    assert rules["too_many_retries"]["conditions"] == [
        {"session_field": "retry_count", "op": ">=", "threshold": "max_retries"}
    ]
    assert rules["phone_ready"]["conditions"] == [{"session_field": "receiver_phone", "pattern": r"^1[3-9]\d{9}$"}]


def test_last_defaults_to_five():
    text = SESSION_RULES_YAML.replace("            last: 3\n", "", 1)
    conditions = config_from_yaml(text)["points"][0]["rules"][1]["conditions"]
    assert conditions[0] == {"session_keyword_seen": "complaint", "last": 5}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "session_field: retry_count",
            "session_field: retries",
            f"{RULES}[2].conditions[0].session_field: 'retries' is not a field of the machine address (declared: "
            "receiver_phone, retry_count) (line 39)",
        ),
        (
            # An ordering operator on a text field.
            "          - session_field: receiver_phone\n            pattern: '^1[3-9]\\d{9}$'\n",
            "          - session_field: receiver_phone\n            op: '>'\n            value: '5'\n",
            f"{RULES}[3].conditions[0].op: a string field is compared by ==, !=, in, matches, not > (line 48)",
        ),
        (
            # A literal that does not fit the field's type.
            '            op: ">="\n            threshold: max_retries\n',
            '            op: "=="\n            value: lots\n',
            f"{RULES}[2].conditions[0].value: the value 'lots' does not fit a integer field (line 41)",
        ),
        (
            # A pattern on a number field.
            '            op: ">="\n            threshold: max_retries\n',
            "            pattern: '^1'\n",
            f"{RULES}[2].conditions[0].pattern: a integer field is compared by <, <=, >, >=, ==, !=, in, not "
            "matches (line 40)",
        ),
        (
            '            op: ">="\n            threshold: max_retries\n',
            '            op: ">="\n            threshold: max_retries\n            pattern: x\n',
            f"{RULES}[2].conditions[0]: match the field with a pattern, or compare it with op and a value, not both "
            "(line 39)",
        ),
        (
            "          - session_keyword_seen: complaint\n",
            "          - session_keyword_seen: grievances\n",
            f"{RULES}[1].conditions[0].session_keyword_seen: there is no keyword list 'grievances' in keyword_lists "
            "(line 31)",
        ),
        (
            "            last: 3\n",
            "            last: 51\n",
            f"{RULES}[1].conditions[0].last: expected a whole number from 1 to 50, got 51 (line 32)",
        ),
        (
            "            last: 3\n",
            "            last: 0\n",
            f"{RULES}[1].conditions[0].last: expected a whole number from 1 to 50, got 0 (line 32)",
        ),
        (
            # A point that moves no machine has no session fields.
            "    machine: address\n",
            "",
            f"{RULES}[2].conditions[0].session_field: address_check moves no state machine, so its sessions have "
            "no fields (line 38)",
        ),
    ],
)
def test_each_problem_names_its_path_and_line(old, new, expected):
    assert old in SESSION_RULES_YAML, old
    problems = config_problems(SESSION_RULES_YAML.replace(old, new, 1))
    assert expected in problems, problems

"""Issue 21 in the YAML configuration: the new evasion options, the segmented mode and unless phrases —
read, defaulted, checked, imported, exported and imported again unchanged."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml, config_problems
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.models import Condition, KeywordList

DOC = """\
version: 1
thresholds: []
keyword_lists:
  - key: complaint
    match: segmented
    terms: [投诉, '12315']
  - key: strict
    decode_escapes: false
    match_pinyin: false
    terms: [报警]
points:
  - key: p
    outcomes: [person, bot]
    default_outcome: bot
    rules:
      - key: complaint
        priority: 10
        category: compliance
        outcome: person
        conditions:
          - input_contains: complaint
            unless: [不是要投诉, 不想投诉]
      - key: strict
        priority: 20
        category: business
        outcome: person
        conditions:
          - input_contains: strict
machines: []
"""


def _lists(text: str) -> dict[str, dict]:
    return {kl["key"]: kl for kl in config_from_yaml(text)["keyword_lists"]}


def test_the_new_options_default_to_on_and_are_always_written():
    lists = _lists(DOC)
    assert all(lists["complaint"][o] is EVASION_DEFAULTS[o] for o in EVASION_OPTIONS)
    assert lists["complaint"]["match_pinyin"] is False  # the one a list asks for
    assert lists["strict"]["decode_escapes"] is False and lists["strict"]["match_pinyin"] is False
    assert lists["strict"]["fold_digits"] is True
    assert lists["complaint"]["match"] == "segmented"


def test_unless_is_read_with_its_condition():
    rules = {r["key"]: r for r in config_from_yaml(DOC)["points"][0]["rules"]}
    assert rules["complaint"]["conditions"] == [{"input_contains": "complaint", "unless": ["不是要投诉", "不想投诉"]}]
    assert rules["strict"]["conditions"] == [{"input_contains": "strict"}]


@pytest.mark.parametrize(
    ("unless", "problem"),
    [
        ("[不是要投诉, 不是要投诉]", "A weak-signal phrase is listed twice."),
        ("不是要投诉", "expected a list"),
        ("[[a]]", "expected text"),
    ],
)
def test_a_bad_unless_is_a_problem_at_its_path(unless, problem):
    text = DOC.replace("unless: [不是要投诉, 不想投诉]", f"unless: {unless}")
    problems = config_problems(text)
    assert problems and all("points[0].rules[0].conditions[0].unless" in p for p in problems), problems
    assert any(problem.lower() in p.lower() for p in problems), problems


def test_unless_on_another_kind_is_an_unknown_key():
    text = DOC.replace(
        "          - input_contains: strict\n", "          - candidate_in: [bot]\n            unless: [x]\n"
    )
    assert any("unknown key 'unless'" in p for p in config_problems(text))


@pytest.mark.django_db
def test_import_export_import_keeps_the_options_the_mode_and_unless():
    config_import(text=DOC, source="t", actor=None, reason="issue 21 options")
    strict = KeywordList.objects.get(key="strict")
    assert (strict.decode_escapes, strict.match_pinyin, strict.fold_digits) == (False, False, True)
    assert KeywordList.objects.get(key="complaint").match_mode == "segmented"
    condition = Condition.objects.get(rule__key="complaint")
    assert condition.unless == ["不是要投诉", "不想投诉"]
    assert "unless 不是要投诉, 不想投诉" in str(condition)
    exported = config_export()
    assert "match_pinyin: false" in exported and "unless:" in exported
    assert config_from_yaml(exported) == config_from_yaml(DOC)


NEGATED_DOC = DOC.replace(
    "            unless: [不是要投诉, 不想投诉]\n",
    "            unless: [不是要投诉, 不想投诉]\n            unless_negated: true\n",
)


def test_unless_negated_is_read_with_its_condition_and_left_out_when_false():
    rules = {r["key"]: r for r in config_from_yaml(NEGATED_DOC)["points"][0]["rules"]}
    assert rules["complaint"]["conditions"] == [
        {"input_contains": "complaint", "unless": ["不是要投诉", "不想投诉"], "unless_negated": True}
    ]
    off = config_from_yaml(NEGATED_DOC.replace("unless_negated: true", "unless_negated: false"))
    assert off == config_from_yaml(DOC)


def test_a_bad_unless_negated_is_a_problem_at_its_path():
    problems = config_problems(NEGATED_DOC.replace("unless_negated: true", "unless_negated: sometimes"))
    assert any("conditions[0].unless_negated" in p and "true or false" in p for p in problems), problems


@pytest.mark.django_db
def test_import_export_import_keeps_unless_negated():
    config_import(text=NEGATED_DOC, source="t", actor=None, reason="negated hits are weak signals")
    condition = Condition.objects.get(rule__key="complaint")
    assert condition.unless_negated is True
    assert str(condition).endswith(" unless negated")
    exported = config_export()
    assert "unless_negated: true" in exported
    assert config_from_yaml(exported) == config_from_yaml(NEGATED_DOC)

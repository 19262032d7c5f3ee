"""The keyword-evasion options in the YAML configuration: read, defaulted, checked, exported, imported."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml, config_problems
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from rules.models import KeywordList

DOC = """\
version: 1
thresholds: []
keyword_lists:
  - key: complaint
    terms: [投诉]
  - key: strict
    fold_traditional: false
    ignore_cjk_gaps: false
    terms: [报警]
points: []
machines: []
"""


def _lists(text: str) -> dict[str, dict]:
    return {kl["key"]: kl for kl in config_from_yaml(text)["keyword_lists"]}


def test_the_options_default_to_on_and_are_always_written():
    lists = _lists(DOC)
    assert (lists["complaint"]["fold_traditional"], lists["complaint"]["ignore_cjk_gaps"]) == (True, True)
    assert (lists["strict"]["fold_traditional"], lists["strict"]["ignore_cjk_gaps"]) == (False, False)


@pytest.mark.parametrize("value", ["yes please", "1", "[]"])
def test_an_option_that_is_not_a_boolean_is_a_problem_at_its_line(value):
    text = DOC.replace("fold_traditional: false", f"fold_traditional: {value}")
    problems = config_problems(text)
    assert [p for p in problems if p.startswith("keyword_lists[1].fold_traditional:")] == [
        p for p in problems if p.endswith("(line 7)")
    ]
    assert len(problems) == 1, problems


@pytest.mark.django_db
def test_import_export_keeps_the_options():
    config_import(text=DOC, source="t", actor=None, reason="options")
    strict = KeywordList.objects.get(key="strict")
    assert (strict.fold_traditional, strict.ignore_cjk_gaps) == (False, False)
    complaint = KeywordList.objects.get(key="complaint")
    assert (complaint.fold_traditional, complaint.ignore_cjk_gaps) == (True, True)
    exported = config_export()
    assert "fold_traditional: false" in exported and "ignore_cjk_gaps: true" in exported
    assert _lists(exported) == _lists(DOC)

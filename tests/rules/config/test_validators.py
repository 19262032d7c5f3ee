"""The one set of configuration validators: pure functions, no database."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rules.config import validators as v
from rules.config.document.validate import config_problems
from rules.engine.conditions.session_field import MATCHES
from rules.models import FactType, MatchMode, Operator


def test_the_models_choices_are_the_validators_vocabulary():
    assert tuple(FactType.values) == v.FACT_TYPES
    # A fact's operators, and the one a session field's pattern is stored with (session_field).
    assert tuple(Operator.values) == (*v.OPERATORS, MATCHES)
    assert tuple(MatchMode.values) == v.MATCH_MODES


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("plain 中文 text", None),
        ("a\x00b", "Text cannot hold a NUL character."),
        ("a\ud800b", "Text cannot hold an unpaired surrogate (U+D800 to U+DFFF)."),
        ("\U0001f600", None),  # a paired surrogate is a character like any other
    ],
)
def test_text_that_cannot_be_stored(text, problem):
    assert v.storable_problem(text) == problem
    assert v.storable_problems({"f": {"k": [text]}}) == ({"f": problem} if problem else {})


def test_regular_expressions_are_checked_as_the_engine_compiles_them():
    assert v.regex_problem(r"^E\d{10}$") is None
    assert v.regex_problem("(x") == "Not a valid regular expression: missing ), unterminated subpattern at position 0."
    assert v.regex_problem("(x", subject="(x").startswith("'(x' is not a valid regular expression: ")
    # A repeat count beyond what re can hold is an OverflowError, not re.error: still a problem, not a crash.
    assert v.regex_problem("a{99999999999}").startswith("Not a valid regular expression: the repetition number")
    assert v.pattern_problem("x" * 201) == "The regular expression is longer than 200 characters."
    assert v.pattern_problem("x" * 200) is None
    assert v.pattern_problem("") == v.pattern_problem(None) == "Give the regular expression."
    assert v.pattern_problem("a\x00") == "Text cannot hold a NUL character."


def test_threshold_bounds():
    d = Decimal
    assert v.threshold_problems(value=d("0.5"), min_value=d(0), max_value=d(1)) == {}
    assert v.threshold_problems(value=d(2), min_value=d(0), max_value=d(1), unit="ratio") == {
        "value": "2 is outside the allowed bounds 0 … 1 ratio."
    }
    assert v.threshold_problems(value=d(2), min_value=d(3), max_value=d(1)) == {
        "max_value": "The upper bound 1 is below the lower bound 3."
    }
    assert v.threshold_problems(value=d(-5), min_value=None, max_value=None) == {}


def test_terms_that_are_the_same_once_stored():
    assert v.same_terms(["Refund", "退款", "ＲＥＦＵＮＤ", "refund "], "substring") == {2: 0, 3: 0}
    assert v.same_terms([r"\D", r"\d"], "regex") == {}  # regexes keep their case
    assert v.term_problem("", "substring") == "A term cannot be empty."
    assert v.term_problem("(", "substring") is None
    assert v.term_problem("(", "regex").startswith("Not a valid regular expression")


def test_keys_and_key_lists():
    assert v.key_problem("refund_2") is None
    assert v.key_problem("Refund") == (
        "'Refund' is not a valid key (use lower-case letters, digits and underscores, starting with a letter, "
        "at most 64)."
    )
    assert v.key_list_problem(["a", "b"]) is None
    assert v.key_list_problem("a") == "Give a list of keys."
    assert v.key_list_problem(["a", "a"]) == "Listed more than once: a."
    assert v.key_list_problem(["a", "B"]) == "Not a valid key: B."


def test_a_fact_type_problem_names_the_fact_only_where_the_field_does_not():
    assert (
        v.fact_type_problem("money") == "Unknown fact type 'money' (use string, number, integer, boolean, string_list)."
    )
    assert v.fact_type_problem("money", subject="amount").startswith("Fact 'amount' has unknown type 'money'")


DOC = """\
version: 1
thresholds: []
keyword_lists:
  - key: words
    name: "bad\\0name"
    match: regex
    terms: ['a{99999999999}', "ok\\ud800"]
points: []
machines: []
"""


def test_yaml_text_that_cannot_be_stored_or_compiled_is_a_problem_with_its_line():
    assert config_problems(DOC) == [
        "keyword_lists[0].name: text cannot hold a NUL character (line 5)",
        "keyword_lists[0].terms[0]: 'a{99999999999}' is not a valid regular expression: the repetition number "
        "is too large (line 7)",
        "keyword_lists[0].terms[1]: text cannot hold an unpaired surrogate (U+D800 to U+DFFF) (line 7)",
    ]

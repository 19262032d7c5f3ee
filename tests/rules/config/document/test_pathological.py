"""Hostile YAML: every document gets a list of problems with their lines, never a traceback.

``validate_config`` runs in other teams' CI on files anyone may edit, and ``import_config`` reads the
same files, so a document nested thousands of levels deep, a number of thousands of digits, a date
that does not exist, text the databases cannot store or an alias bomb must each come back as a
problem naming its line. The table covers each kind once, at a known line; hypothesis then puts
pathological values at random places of the demo configuration.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.config.document.validate import config_check
from rules.config.document.yamlload import MAX_DEPTH, MAX_NUMBER_DIGITS, MAX_VALUES
from rules.config.yaml_import import config_import
from rules.errors import ConfigError
from tests.support.configio import DEMO_FILE

DEMO = DEMO_FILE.read_text(encoding="utf-8")
LINE = re.compile(r"\(line (\d+)\)$")

# One valid document; each case below replaces the value on line 4 (the threshold's value).
BASE = """\
version: 1
thresholds:
  - key: limit
    value: 500
keyword_lists: []
points: []
machines: []
"""


def with_value(value: str) -> str:
    lines = BASE.splitlines()
    lines[3] = f"    value: {value}"
    return "\n".join(lines) + "\n"


def problems_of(text: str) -> list[str]:
    document, problems = config_check(text)
    assert (document is None) == bool(problems)
    for problem in problems:
        assert LINE.search(problem), problem  # every problem names its line
    return problems


def lines_of(problems: list[str]) -> set[int]:
    return {int(LINE.search(p).group(1)) for p in problems}


HUGE = "9" * 5_000  # int() refuses more than 4,300 digits


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(HUGE, f"more than {MAX_NUMBER_DIGITS} digits", id="5000-digit integer"),
        pytest.param("-" + "9" * 200, f"more than {MAX_NUMBER_DIGITS} digits", id="200-digit negative integer"),
        pytest.param("0x" + "f" * 5_000, f"more than {MAX_NUMBER_DIGITS} digits", id="hexadecimal"),
        pytest.param("0b" + "1" * 20_000, f"more than {MAX_NUMBER_DIGITS} digits", id="binary"),
        pytest.param("0" + "7" * 5_000, f"more than {MAX_NUMBER_DIGITS} digits", id="octal"),
        pytest.param("1" + "0" * 400 + ".5", "finite number", id="float beyond double range"),
        pytest.param("1.0e+99999", "finite number", id="huge exponent"),
        pytest.param(".inf", "finite number", id="infinity"),
        pytest.param(".nan", "finite number", id="NaN"),
        pytest.param("!!int abc", "not a whole number", id="tagged int that is not one"),
        pytest.param("!!float x", "not a number", id="tagged float that is not one"),
        pytest.param("[" * 5_000 + "]" * 5_000, f"deeper than {MAX_DEPTH} levels", id="deep flow list"),
        pytest.param("{a: " * 3_000 + "1" + "}" * 3_000, f"deeper than {MAX_DEPTH} levels", id="deep flow map"),
        pytest.param('"a\\0b"', "got the text 'a\\x00b'", id="NUL escape"),
        pytest.param('"\\ud800"', "got the text '\\ud800'", id="lone surrogate escape"),
        pytest.param("!!python/object:os.system x", "invalid YAML value", id="python tag"),
    ],
)
def test_a_pathological_value_is_a_problem_on_its_line(value, expected):
    problems = problems_of(with_value(value))
    assert any(expected in p for p in problems), problems
    assert lines_of(problems) == {4}, problems


def test_a_date_that_does_not_exist_is_a_problem_on_its_line():
    rule = "      - key: high_risk_keyword\n"
    text = DEMO.replace(rule, rule + "        effective_from: 2025-13-45\n", 1)
    assert text != DEMO
    line = text.splitlines().index("        effective_from: 2025-13-45") + 1
    problems = problems_of(text)
    assert [p for p in problems if "not a date" in p and p.endswith(f"(line {line})")], problems


def test_a_deep_block_structure_names_the_line_where_it_gets_too_deep():
    nested = "".join("  " * i + "- \n" for i in range(1, 3_000))
    problems = problems_of(f"version: 1\nthresholds:\n{nested}")
    # The document's mapping is level 1 (line 1); thresholds' list, level 2, starts on line 3, and each
    # line after it opens one more level: the first level past the limit starts on line MAX_DEPTH + 2.
    assert problems == [f"document: the document nests deeper than {MAX_DEPTH} levels (line {MAX_DEPTH + 2})"]


def test_text_the_databases_cannot_store_is_refused_in_keys_too():
    problems = problems_of(BASE.replace("    value: 500", '    value: 500\n    "a\\0": 1'))
    assert any("mapping key" in p and "NUL" in p and p.endswith("(line 5)") for p in problems), problems


def test_an_alias_bomb_is_refused_without_expanding():
    # Nine aliases of nine aliases, eight levels deep: 9**8 (43 million) values from 400 bytes.
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefg", "bcdefgh", strict=True)
    )
    assert problems_of(bomb) == [f"document: the document expands to more than {MAX_VALUES} values (line 1)"]


def test_an_alias_inside_itself_is_a_problem():
    problems = problems_of("version: &v [1, *v]\n")
    assert problems, problems


# --- Anywhere in a real configuration -----------------------------------------------------------------

PATHOLOGICAL = [
    HUGE,
    "0x" + "f" * 5_000,
    "-" + "9" * 150,
    "1e999",
    "-.inf",
    ".nan",
    "2025-13-45",
    "2025-02-30T00:00:00Z",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "99999-01-01",
    "!!int x",
    "!!binary aGk=",
    "!!timestamp x",
    "[" * 2_000 + "]" * 2_000,
    "{a: " * 500 + "1" + "}" * 500,
    '"\\0"',
    '"\\udfff"',
    "1:2:3:4:5:6:7:8:9",
    "*nowhere",
    "~",
    "''",
    "[]",
    "{}",
    "-1",
    "1_000_000_000_000_000_000",
    "12:61",
    "!!set {a, b}",
    "!!omap [a: 1]",
]
SCALAR_LINE = re.compile(r"^(\s*(?:- )?[a-z_]+: )(.+)$")
SCALAR_LINES = [i for i, line in enumerate(DEMO.splitlines()) if SCALAR_LINE.match(line)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(SCALAR_LINES), st.sampled_from(PATHOLOGICAL)), min_size=1, max_size=3))
def test_pathological_values_anywhere_in_the_demo_are_problems_with_lines(replacements):
    lines = DEMO.splitlines()
    for index, value in replacements:
        lines[index] = SCALAR_LINE.sub(lambda m, v=value: m.group(1) + v, lines[index])
    text = "\n".join(lines) + "\n"
    problems = problems_of(text)  # never raises
    assert all(1 <= line <= len(lines) for line in lines_of(problems)), problems


# --- The commands -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [HUGE, "[" * 5_000 + "]" * 5_000, '"\\0"', "2025-13-45T00:00:00Z"])
def test_validate_config_lists_the_problem_and_exits_non_zero(tmp_path, capsys, value):
    path = tmp_path / "config.yaml"
    path.write_text(with_value(value), encoding="utf-8")
    with pytest.raises(CommandError, match="problem"):
        call_command("validate_config", str(path))
    assert "(line 4)" in capsys.readouterr().err


@pytest.mark.django_db
@pytest.mark.parametrize("value", [HUGE, "[" * 5_000 + "]" * 5_000, '"\\0"', '"\\ud800"'])
def test_import_config_refuses_and_writes_nothing(tmp_path, capsys, value, staff_user):
    path = tmp_path / "config.yaml"
    path.write_text(with_value(value), encoding="utf-8")
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_config", str(path), "--user", "ops")
    assert "(line 4)" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        config_import(text=with_value(value), source="t", actor=None, reason="t")

"""The three management commands: output, exit behaviour, options."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError

from rules.config.selectors import config_document
from rules.models import ConfigRevision, Threshold
from tests.support.configio import DEMO_FILE, FULL_YAML, db_state

DEMO = DEMO_FILE.read_text(encoding="utf-8")


def call(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------------- validate_config


def test_validate_config_says_ok_for_the_demo():
    out, _ = call("validate_config", str(DEMO_FILE))
    assert out == (
        f"{DEMO_FILE}: OK — 2 thresholds, 2 keyword lists, 2 decision points with 5 rules, 2 state machines.\n"
    )


def test_validate_config_lists_every_problem_and_fails(write):
    path = write(DEMO.replace("value: 0.65", "value: 1.65").replace("priority: 60", "priority: -60"))
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"2 problem\(s\) in .*config.yaml"):
        call_command("validate_config", path, stderr=err)
    assert err.getvalue().splitlines() == [
        "thresholds[0].value: 1.65 is outside the allowed bounds 0 … 1 ratio (line 15)",
        "points[0].rules[3].priority: expected a whole number ≥ 0, got -60 (line 139)",
    ]


def test_validate_config_exits_with_status_1_from_the_command_line(write, capsys):
    path = write("version: 1\nthresholds: {}\n")
    with pytest.raises(SystemExit) as exc:
        execute_from_command_line(["manage.py", "validate_config", path])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "thresholds: expected a list, got a mapping (line 2)" in err
    assert "document: missing required key 'keyword_lists' (line 1)" in err


def test_validate_config_of_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        call("validate_config", str(tmp_path / "nope.yaml"))


# --------------------------------------------------------------------------------- export_config


@pytest.mark.django_db
def test_export_config_writes_stdout_or_a_file(write, tmp_path, staff_user):
    call("import_config", write(FULL_YAML), "--user", "ops")
    out, _ = call("export_config")
    target = tmp_path / "out.yaml"
    call("export_config", "-o", str(target))
    assert target.read_text(encoding="utf-8") == out
    assert out.startswith("version: 1\n")


@pytest.mark.django_db
def test_export_then_import_through_the_commands_is_byte_identical(write, tmp_path, staff_user):
    call("import_config", str(DEMO_FILE), "--user", "ops")
    target = tmp_path / "exported.yaml"
    call("export_config", "-o", str(target))
    out, _ = call("import_config", str(target), "--user", "ops")
    assert out == f"No changes: the live configuration already matches {target}.\n"
    again, _ = call("export_config")
    assert again == target.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------- import_config


@pytest.mark.django_db
@pytest.mark.applies_config_at_once(
    reason="prints what an applied import says; a held one: tests/rules/governance/test_paths.py"
)
def test_import_config_prints_the_diff_and_the_revision(write, staff_user):
    out, _ = call("import_config", str(DEMO_FILE), "--user", "ops", "--reason", "demo")
    lines = out.splitlines()
    assert lines[0] == "+ threshold auto_refund_limit: value 500 CNY, bounds 0 … 100000, high risk"
    assert lines[-1] == "Applied 20 change(s) as revision 1."
    revision = ConfigRevision.objects.get()
    assert (revision.created_by, revision.reason) == (staff_user, "demo")
    assert Threshold.history.first().history_user == staff_user

    out, _ = call("import_config", write(DEMO.replace("value: 0.65", "value: 0.6")), "--user", "ops")
    assert out.splitlines() == ["~ threshold min_confidence: value 0.65 → 0.6", "Applied 1 change(s) as revision 2."]
    assert ConfigRevision.objects.get(number=2).reason.startswith("import_config ")
    assert ConfigRevision.objects.get(number=2).created_by == staff_user


@pytest.mark.django_db
def test_import_config_dry_run_writes_nothing(write, staff_user):
    before = db_state()
    out, _ = call("import_config", str(DEMO_FILE), "--dry-run")
    assert out.splitlines()[-1] == (
        "Dry run: 20 change(s) checked; applying them would need no approval; nothing was written."
    )
    assert db_state() == before


@pytest.mark.django_db
def test_import_config_of_an_invalid_file_fails_and_writes_nothing(write, staff_user):
    call("import_config", str(DEMO_FILE), "--user", "ops")
    before = db_state()
    path = write(DEMO.replace("outcome: refund_review", "outcome: refund"))
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"1 problem\(s\) in .*; nothing was written\."):
        call_command("import_config", path, "--user", "ops", stderr=err)
    assert err.getvalue() == "points[0].rules[1].outcome: 'refund' is not an outcome of intent_routing (line 127)\n"
    assert db_state() == before


@pytest.mark.django_db
def test_import_config_fails_with_exit_status_1(write, staff_user):
    # execute_from_command_line would close the test's database connection; CommandError carries the
    # status the command line exits with.
    path = write(DEMO.replace("      - 投诉\n", "      - 投诉\n      - 投诉\n"))
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_config", path, "--user", "ops", stderr=err)
    assert exc.value.returncode == 1
    assert err.getvalue() == "keyword_lists[0].terms[1]: '投诉' is listed twice (also at terms[0]) (line 41)\n"
    assert config_document()["points"] == []


@pytest.mark.django_db
def test_import_config_refuses_an_unknown_user():
    with pytest.raises(CommandError, match="There is no user 'nobody'"):
        call("import_config", str(DEMO_FILE), "--user", "nobody")
    assert ConfigRevision.objects.count() == 0


@pytest.mark.parametrize("char", ["\x10", "\x16", "\x07"], ids=["U+0010", "U+0016", "U+0007"])
def test_validate_config_names_a_control_character_in_one_line(write, capsys, char):
    """YAML allows no control characters but tab and line breaks: PyYAML's ReaderError was a traceback."""
    path = write(DEMO.replace("value: 0.65", f"value: 0.6{char}5", 1))
    line = DEMO[: DEMO.index("value: 0.65")].count("\n") + 1
    with pytest.raises(SystemExit) as exc:
        execute_from_command_line(["manage.py", "validate_config", path])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ReaderError" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"document: invalid YAML: the character U+{ord(char):04X} (column ")
    assert first.endswith(f"(line {line})")

"""docs/api.md's examples, run top to bottom as written against a live server with the demo loaded.

Every ``sh``/``bash`` block that calls ``$ARBITER`` — the agent's and the staff's — and the staff's setup
block runs, in document order, in one bash process with ``ARBITER`` and ``TOKEN`` set (the document's own
``export`` line holds placeholders). ``curl`` is wrapped so each call's status and body are recorded; a
call must answer 2xx unless the comment line right after it starts with a status (``# 409 …``), which
it must then answer. What the document shows a call answering — the comment after it, or the ``json``
block right after the shell block for its last call — is checked against the real answer: every member
it names is there, and the states, codes, decisions and ids it names have those values. So an example
that drifts from the API (a moved field, a session in the wrong state, an id it never set, an answer
that is not what the commands before it lead to) fails here.

``manage.py`` runs on the server, not against this test's database from another process: the three
commands the staff examples use (``shell`` making the second approver, ``create_user_token``,
``export_config``) are done here with the same services before the script runs, and the script's
``.venv/bin/python`` hands back their results.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User

from rules.config.yaml_export import config_export
from rules.governance.tokens import staff_token_create
from tests.support import ROOT, groups_ensure

API_DOC = ROOT / "docs" / "api.md"
WRAPPER = r"""
set -euo pipefail
curl() {
  local out n
  out=$(command curl -w $'\n%{http_code}' "$@")
  printf '%s\n' "${out##*$'\n'}" >> "$STATUSES"
  n=$(wc -l < "$STATUSES")
  printf '%s' "${out%$'\n'*}" > "$OUTPUTS/$n"
  printf '%s\n' "${out%$'\n'*}"
}
# manage.py on the server: what the test did beforehand (see the module docstring).
.venv/bin/python() {
  case "$1 $2" in
    "manage.py create_user_token") local name=${3//./_}; printf 'token:\n%s\n' "${!name}" ;;
    "manage.py export_config") cat "$EXPORTED_CONFIG" ;;
    "manage.py shell") : ;;
    *) echo "the document runs a command the test does not know: $*" >&2; return 1 ;;
  esac
}
"""
STATUS_COMMENT = re.compile(r"^#\s*(\d{3})\b")
MEMBER = re.compile(r'"(\w+)": ("(?:[^"\\]|\\.)*"|null|true|false|-?\d+(?:\.\d+)?)')
# Members whose value the document's sample must get right; the others must only be there.
CHECKED = {
    "state", "from", "code", "decision", "ruled_by", "risk", "point", "session_id", "machine", "author",
    "claimed_by", "handed_off", "terminal", "needs_candidate", "overridden", "seq", "count", "user",
    "applied_revision", "base_revision", "revision", "change_request", "allowed",
}  # fmt: skip
STAFF_USERS = ("admin", "li.wei")


def _runs(lines: list[str]) -> bool:
    text = "\n".join(lines)
    return ("$ARBITER" in text or "create_user_token" in text) and "export ARBITER=" not in text


def runnable_blocks(text: str) -> list[list[str]]:
    """The lines of each shell block that runs (fences are whole lines: a ``` inside a quoted JSON
    string does not close a block)."""
    return [lines for kind, lines in _fenced(text) if kind in ("sh", "bash") and _runs(lines)]


def _fenced(text: str) -> list[tuple[str, list[str]]]:
    """The fenced blocks as (language, lines); a heading between two blocks is a block of kind "#"
    (a sample under another heading is not the answer of the commands before it)."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    kind = ""
    for line in text.splitlines():
        if current is None and line.startswith("#"):
            blocks.append(("#", [line]))
        elif current is None and line.strip().startswith("```"):
            kind, current = line.strip()[3:], []
        elif current is not None and line.strip() == "```":
            blocks.append((kind, current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def shown_answers(text: str) -> list[str]:
    """One entry per curl call in order: what the document shows it answering ('' when nothing)."""
    shown: list[str] = []
    fenced = _fenced(text)
    for number, (kind, block) in enumerate(fenced):
        if kind not in ("sh", "bash") or not _runs(block):
            continue
        calls: list[str] = []
        for index, line in enumerate(block):
            for _ in range(line.count("curl ")):
                end = index
                while block[end].rstrip().endswith("\\") and end + 1 < len(block):
                    end += 1
                comment = []
                for following in block[end + 1 :]:
                    if not following.lstrip().startswith("#"):
                        break
                    comment.append(following)
                calls.append("\n".join(comment))
        following_block = fenced[number + 1] if number + 1 < len(fenced) else None
        if calls and not calls[-1] and following_block and following_block[0] == "json":
            calls[-1] = "\n".join(following_block[1])
        shown.extend(calls)
    return shown


def _values(answer: Any, key: str) -> list[Any]:
    """Every value of ``key`` anywhere in the answer."""
    found: list[Any] = []
    if isinstance(answer, dict):
        for k, v in answer.items():
            if k == key:
                found.append(v)
            found.extend(_values(v, key))
    elif isinstance(answer, list):
        for item in answer:
            found.extend(_values(item, key))
    return found


def sample_problems(sample: str, body: str) -> list[str]:
    """How the real answer differs from the document's sample of it."""
    if not sample.strip():
        return []
    try:
        answer = json.loads(body)
    except ValueError:
        return [f"the answer is not JSON: {body[:200]}"]
    problems = []
    for key, raw in MEMBER.findall(sample):
        values = _values(answer, key)
        if not values:
            problems.append(f"no {key!r} in the answer")
        elif key in CHECKED and "…" not in raw and json.loads(raw) not in values:
            problems.append(f"{key!r} is {values[0]!r}, the document says {raw}")
    return problems


def expected_statuses(blocks: list[list[str]]) -> list[int | None]:
    """One entry per curl call in order: the status a following comment names, or None for 2xx."""
    expected: list[int | None] = []
    for block in blocks:
        for index, line in enumerate(block):
            for _ in range(line.count("curl ")):
                following = block[index + 1 :]
                # The call may continue over backslash-ended lines: the comment comes after its last one.
                while following and block[index].rstrip().endswith("\\") and following[0].strip():
                    index += 1
                    following = block[index + 1 :]
                match = STATUS_COMMENT.match(following[0].strip()) if following else None
                expected.append(int(match.group(1)) if match else None)
    return expected


def _staff_setup(tmp_path: Path) -> dict[str, str]:
    """What the document's staff setup block does on the server: a second approver, a token for each."""
    groups_ensure()  # a transactional test before this one may have flushed what the migrations made
    admin = User.objects.create_superuser("admin", password="admin-password-1")
    approver = User.objects.create_user("li.wei", password="change-me", is_staff=True)
    approver.groups.add(Group.objects.get(name="risk_approvers"))
    exported = tmp_path / "exported.yaml"
    exported.write_text(config_export(), encoding="utf-8")
    tokens = {
        name.replace(".", "_"): staff_token_create(user=user)
        for name, user in zip(STAFF_USERS, (admin, approver), strict=True)
    }
    return {**tokens, "EXPORTED_CONFIG": str(exported)}


def test_the_api_examples_run_as_written(django_db_reset_sequences, live_demo, live_token, tmp_path: Path):
    # Sequences start again at 1 (PostgreSQL's go on across tests): the ids the document shows are a
    # fresh installation's.
    text = API_DOC.read_text(encoding="utf-8")
    blocks = runnable_blocks(text)
    assert len(blocks) >= 14, "the runner no longer finds the examples"
    statuses, outputs = tmp_path / "statuses", tmp_path / "outputs"
    statuses.touch()
    outputs.mkdir()
    script = WRAPPER + "\n".join("\n".join(block) for block in blocks) + "\n"
    env = {
        **os.environ,
        **_staff_setup(tmp_path),
        "ARBITER": live_demo.url,
        "TOKEN": live_token,
        "STATUSES": str(statuses),
        "OUTPUTS": str(outputs),
    }
    work = tmp_path / "work"  # the examples write config.yaml where they run
    work.mkdir()
    run = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120, cwd=work, check=False
    )
    assert run.returncode == 0, run.stderr + run.stdout
    got = [int(code) for code in statuses.read_text().split()]
    wanted = expected_statuses(blocks)
    assert len(got) == len(wanted), (got, wanted)
    for number, (status, expected) in enumerate(zip(got, wanted, strict=True), 1):
        if expected is None:
            assert 200 <= status < 300, f"call {number} answered {status}\n{run.stdout}"
        else:
            assert status == expected, f"call {number} answered {status}, the document says {expected}"
    samples = shown_answers(text)
    assert len(samples) == len(got), (len(samples), len(got))
    wrong = {
        number: problems
        for number, sample in enumerate(samples, 1)
        if (problems := sample_problems(sample, (outputs / str(number)).read_text(encoding="utf-8")))
    }
    assert not wrong, "the document's answers differ from the server's:\n" + "\n".join(
        f"call {n}: {p}\n  the server said: {(outputs / str(n)).read_text(encoding='utf-8')[:400]}"
        for n, p in wrong.items()
    )

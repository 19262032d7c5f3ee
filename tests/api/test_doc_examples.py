"""docs/api.md's examples, run top to bottom as written against a live server with the demo loaded.

Every ``sh``/``bash`` block that calls ``$ARBITER`` runs, in document order, in one bash process with
``ARBITER`` and ``TOKEN`` set (the document's own ``export`` line holds placeholders). ``curl`` is wrapped
so each call's status is recorded; a call must answer 2xx unless the comment line right after it
starts with a status (``# 409 …``), which it must then answer. So an example that drifts from the API
(a moved field, a session in the wrong state, an id it never set) fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.api.conftest import ROOT

API_DOC = ROOT / "docs" / "api.md"
WRAPPER = r"""
set -euo pipefail
curl() {
  local out
  out=$(command curl -w $'\n%{http_code}' "$@")
  printf '%s\n' "${out##*$'\n'}" >> "$STATUSES"
  printf '%s\n' "${out%$'\n'*}"
}
"""
STATUS_COMMENT = re.compile(r"^#\s*(\d{3})\b")


def runnable_blocks(text: str) -> list[list[str]]:
    """The lines of each shell block that calls $ARBITER (fences are whole lines: a ``` inside a
    quoted JSON string does not close a block)."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if current is None and line.strip() in ("```sh", "```bash"):
            current = []
        elif current is not None and line.strip() == "```":
            if any("$ARBITER" in item for item in current) and not any("export ARBITER=" in i for i in current):
                blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return blocks


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


def test_the_api_examples_run_as_written(live_demo, live_token, tmp_path: Path):
    blocks = runnable_blocks(API_DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 10, "the runner no longer finds the examples"
    statuses = tmp_path / "statuses"
    statuses.touch()
    script = WRAPPER + "\n".join("\n".join(block) for block in blocks) + "\n"
    env = {**os.environ, "ARBITER": live_demo.url, "TOKEN": live_token, "STATUSES": str(statuses)}
    run = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
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

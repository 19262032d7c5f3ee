"""``ARBITER_REQUIRE_BROWSER=1`` (set by CI) turns a missing browser stack into a failure, not a skip.

Playwright is made unimportable for a child pytest run by a stand-in package first on its path; the
run must fail and say why. Without the variable the same run skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
ONE_BROWSER_TEST = "tests/browser/test_admin_browser.py::test_ops_edit_a_threshold_in_the_browser"


def _run_without_playwright(tmp_path: Path, required: bool) -> subprocess.CompletedProcess[str]:
    blocked = tmp_path / "blocked" / "playwright"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("Playwright is blocked for this test")\n')
    # SQLite in memory and no broker for the child: on PostgreSQL it would create (and drop) the very
    # test database this run is using.
    dropped = {"ARBITER_REQUIRE_BROWSER", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = os.pathsep.join([str(blocked.parent), str(ROOT)])
    if required:
        env["ARBITER_REQUIRE_BROWSER"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", ONE_BROWSER_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason="without Chromium the run fails earlier, for that reason")
def test_a_required_browser_run_fails_when_playwright_cannot_be_imported(tmp_path):
    required = _run_without_playwright(tmp_path / "required", required=True)
    assert required.returncode == 1, required.stdout[-2000:]
    assert "ARBITER_REQUIRE_BROWSER=1 but Playwright cannot be imported" in required.stdout
    optional = _run_without_playwright(tmp_path / "optional", required=False)
    assert optional.returncode == 0, optional.stdout[-2000:]
    assert "1 skipped" in optional.stdout and "Playwright cannot be imported" in optional.stdout

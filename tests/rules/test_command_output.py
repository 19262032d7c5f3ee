"""What ``import_config`` and ``decision_map --snapshot`` print, with the embedded defaults (no SMTP server,
no broker): their result, and at most one log line per e-mail — no whole console e-mail with MIME headers,
no Celery/kombu lines in front of it."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command

from decision_service.env import BASE_DIR
from rules.models import ChangeRequest
from tests.support import DEMO_TEXT, make_user

RAISED = DEMO_TEXT.replace("    value: 500\n", "    value: 600\n")
NOISE = ("Content-Type:", "MIME-Version:", "Subject:", "Message-ID:", "kombu", "celery", "Warning", "-------")


def _clean(text: str) -> None:
    for word in NOISE:
        assert word not in text, f"{word!r} in the output:\n{text}"


def test_import_config_prints_its_result_and_logs_one_line_per_e_mail(
    demo, settings, tmp_path, caplog, capfd, django_capture_on_commit_callbacks, monkeypatch
):
    from decision_service.celery import app as celery_app
    from decision_service.settings import base

    # The embedded default: the notification task runs inside the command (CI's PostgreSQL run sets a broker).
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)

    # pytest-django puts the locmem backend in place: put back the one the settings choose without EMAIL_HOST.
    assert not base.env.EMAIL_HOST
    settings.EMAIL_BACKEND = base.EMAIL_BACKEND
    make_user("wang", "risk_approvers")
    make_user("li", "config_editors")
    path = tmp_path / "raised.yaml"
    path.write_text(RAISED, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.INFO, logger="arbiter.mail"), django_capture_on_commit_callbacks(execute=True):
        call_command("import_config", str(path), "--user", "li", stdout=out, stderr=err)
    captured = capfd.readouterr()
    assert out.getvalue().splitlines()[-1].endswith("pending approval")
    for text in (out.getvalue(), err.getvalue(), captured.out):
        _clean(text)
    mails = [r.getMessage() for r in caplog.records if r.name == "arbiter.mail" and r.levelno == logging.INFO]
    (request,) = ChangeRequest.objects.all()
    assert mails == [f"e-mail to wang@example.com: [Arbiter] Change request {request.pk} waits for your approval"]


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=300
    )


def test_the_commands_output_is_their_result_in_a_real_run(tmp_path: Path):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("EMAIL_", "CELERY_", "DJANGO_", "DATABASE_", "LOG_", "ARBITER_"))
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'arbiter.db'}", DJANGO_SETTINGS_MODULE="decision_service.settings.local"
    )
    for args in (("migrate", "--noinput"), ("demo_setup",)):
        done = _manage(env, *args)
        assert done.returncode == 0, done.stderr
    give_mail = (
        "from django.contrib.auth.models import User; "
        "User.objects.filter(username__in=['admin', 'approver']).update(email='ops@example.com')"
    )
    assert _manage(env, "shell", "-c", give_mail).returncode == 0
    raised = tmp_path / "raised.yaml"
    raised.write_text(RAISED, encoding="utf-8")

    imported = _manage(env, "import_config", str(raised), "--user", "admin")
    assert imported.returncode == 0, imported.stderr
    _clean(imported.stdout + imported.stderr)
    assert imported.stdout.splitlines()[-1].startswith("change request ")
    assert imported.stdout.splitlines()[-1].endswith(" pending approval")
    assert imported.stderr.count("arbiter.mail e-mail to ops@example.com: [Arbiter] Change request") == 1
    assert len(imported.stderr.strip().splitlines()) == 1

    snapshot = _manage(env, "decision_map", "--snapshot")
    assert snapshot.returncode == 0, snapshot.stderr
    _clean(snapshot.stdout + snapshot.stderr)
    [result] = snapshot.stdout.strip().splitlines()
    assert result.startswith("Snapshot 1 of the decision-point map taken at ")
    assert "arbiter.mail e-mail to ops@example.com: [Arbiter] Decision-point map of " in snapshot.stderr
    assert len(snapshot.stderr.strip().splitlines()) == 1

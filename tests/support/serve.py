"""Arbiter in processes of its own with production settings: their environment, ``manage.py``, a port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from decision_service.env import BASE_DIR

PRODUCTION = "decision_service.settings.production"


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment without Arbiter's settings, plus production settings on a SQLite file
    in ``tmp_path``."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "ARBITER_", "SECURE_", "CELERY_"))
        and k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "STATIC_ROOT", "WEB_CONCURRENCY", "DEBUG"}
    }
    return {
        **keep,
        "DJANGO_SETTINGS_MODULE": PRODUCTION,
        "SECRET_KEY": "production-test-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'arbiter.sqlite3'}",
        "STATIC_ROOT": str(tmp_path / "static"),
        **extra,
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py`` in a process of its own with ``env``; the caller reads its return code and output."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=300
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_until_listening(server: subprocess.Popen[str], port: int, timeout: float = 120) -> None:
    """Wait (polling, with a deadline) until ``server`` accepts connections on ``port``; fail with its
    output if it exits first."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.2)

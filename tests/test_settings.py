from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from decision_service import celery_app
from decision_service.env import BASE_DIR, parse_database_url


def test_database_url_forms():
    pg = parse_database_url("postgres://arb:s%40cret@db.internal:6543/arbiter")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"], pg["NAME"]) == (
        "arb",
        "s@cret",
        "db.internal",
        "6543",
        "arbiter",
    )
    assert parse_database_url("sqlite:////var/lib/arbiter.db")["NAME"] == "/var/lib/arbiter.db"
    with pytest.raises(ValueError, match="unsupported scheme 'mysql'"):
        parse_database_url("mysql://x@y/z")


@pytest.mark.django_db
def test_the_database_in_use_is_the_one_database_url_names():
    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected


def test_celery_is_eager_without_a_broker_and_reaches_the_broker_when_given():
    broker = os.environ.get("CELERY_BROKER_URL", "")
    assert settings.CELERY_TASK_ALWAYS_EAGER is (not broker)
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=2)
        assert conn.connected
        scheme = broker.split(":", 1)[0] if broker else "memory"
        assert conn.as_uri().split(":", 1)[0] == scheme


def _settings_process(module: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE"}}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)",
        ],
        env={**clean, "DJANGO_SETTINGS_MODULE": module, **env},
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_production_settings_refuse_to_start_without_a_secret_key():
    refused = _settings_process("decision_service.settings.production")
    assert refused.returncode != 0
    assert "SECRET_KEY must be set" in refused.stderr
    started = _settings_process("decision_service.settings.production", SECRET_KEY="x" * 50, ALLOWED_HOSTS="a.example")
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == "False"


def test_languages_include_simplified_chinese_and_time_is_zone_aware():
    assert ("zh-hans", "简体中文") in settings.LANGUAGES
    assert settings.USE_TZ is True


def test_debug_can_be_turned_off_on_a_developer_machine():
    on = _settings_process("decision_service.settings.local")
    off = _settings_process("decision_service.settings.local", DEBUG="false")
    assert (on.stdout.strip(), off.stdout.strip()) == ("True", "False")

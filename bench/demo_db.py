"""The database a service-level benchmark runs against: ``DATABASE_URL``'s, or a new SQLite file, migrated
and holding the after-sales demo. Celery is left eager (no broker), as the embedded defaults run it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def demo_database(prefix: str) -> None:
    """Set Django up on the test settings, migrate, and load the demo unless it is there already."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "decision_service.settings.test"
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tempfile.mkdtemp(prefix=prefix)) / 'bench.sqlite3'}"
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    from rules.models import DecisionPoint
    from tests.support import load_demo

    call_command("migrate", verbosity=0, interactive=False)
    if not DecisionPoint.objects.filter(key="intent_routing").exists():
        load_demo()

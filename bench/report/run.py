"""Time the decision-point map at scale (issue #11: under one second with 1,000,000 decisions).

    DATABASE_URL=postgres://… .venv/bin/python manage.py generate_decisions --count 1000000 --days 14
    DATABASE_URL=postgres://… .venv/bin/python -m bench.report.run [--rounds 7]

Against the database in ``DATABASE_URL`` as it is (load a configuration and generate a log first), it
times the report through Django's request handling in-process (URL routing, authentication,
middleware, rendering; no socket):

- ``GET /api/v1/reports/decision-map?days=14`` with a staff token, and
- the admin page ``/admin/rules/decisionrecord/map/?days=14`` (logged in, HTML with the SVG charts),

each **cold** (the first request of a fresh process: new connection, nothing of the configuration or
templates cached; PostgreSQL's own buffers stay as they are, this script cannot empty them) and **warm**
(the median of the next rounds), first with the rollups removed (every day counted from the log), then
after ``manage.py decision_rollups`` rebuilt them (timed too), alternating nothing else in between.
It prints a Markdown table for bench/RESULTS.md. The machine may be shared: compare the two columns of
one run rather than numbers from different days.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Any

API = "/api/v1/reports/decision-map?days=14"
ADMIN = "/admin/rules/decisionrecord/map/?days=14"


def _django() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to the PostgreSQL database holding the generated log.")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.local")
    import django

    django.setup()


def _clients() -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from rules.governance.tokens import staff_token_create

    User = get_user_model()
    user = User.objects.filter(username="bench_report").first()
    if user is None:
        user = User.objects.create_superuser(username="bench_report", password=None)
    # One token for the whole run: the cold runs' fresh processes are handed the parent's.
    token = os.environ.get("BENCH_REPORT_TOKEN") or staff_token_create(user=user, rotate=True)
    os.environ["BENCH_REPORT_TOKEN"] = token
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT="application/json")
    admin = Client(HTTP_HOST="127.0.0.1")
    admin.force_login(user)
    return api, admin


def _get(client: Any, url: str) -> float:
    began = time.perf_counter()
    response = client.get(url)
    took = time.perf_counter() - began
    if response.status_code != 200:
        sys.exit(f"{url}: {response.status_code} {response.content[:300]!r}")
    return took


def one(which: str) -> None:
    """A fresh process's first request (``--one api|admin``): prints seconds."""
    _django()
    api, admin = _clients()
    print(f"{_get(api if which == 'api' else admin, API if which == 'api' else ADMIN):.4f}")


def _cold(which: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        out = subprocess.run(  # noqa: S603 - this interpreter, this module, a fixed choice
            [sys.executable, "-m", "bench.report.run", "--one", which], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def _warm(client: Any, url: str, rounds: int) -> tuple[float, float]:
    _get(client, url)
    times = [_get(client, url) for _ in range(rounds)]
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="warm requests per measurement (median)")
    parser.add_argument("--cold-rounds", type=int, default=3, help="fresh processes per cold measurement (median)")
    parser.add_argument("--one", choices=["api", "admin"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one)
        return
    _django()
    from django.core.management import call_command

    from rules.models import DecisionRecord, DecisionRollupDay
    from rules.reports.decision_map import decision_map

    rows = DecisionRecord.objects.count()
    api, admin = _clients()
    results: dict[str, dict[str, Any]] = {}
    for label in ("without rollups (every day counted from the log)", "with rollups (closed days)"):
        if label.startswith("without"):
            DecisionRollupDay.objects.all().delete()
            rebuild = None
        else:
            began = time.perf_counter()
            call_command("decision_rollups", "--days", "20", stdout=open(os.devnull, "w"))  # noqa: SIM115
            rebuild = time.perf_counter() - began
        report = decision_map(days=14)
        results[label] = {
            "rolled_up_days": report["window"]["rolled_up_days"],
            "decisions": sum(p["decisions"] for p in report["points"]),
            "api_cold": _cold("api", args.cold_rounds),
            "api_warm": _warm(api, API, args.rounds),
            "admin_cold": _cold("admin", args.cold_rounds),
            "admin_warm": _warm(admin, ADMIN, args.rounds),
            "rebuild": rebuild,
        }
    print(f"{rows:,} decisions in the log; window: 14 days; {os.cpu_count()} CPUs (shared with other work)\n")
    print("| | " + " | ".join(results) + " |")
    print("| --- | " + " | ".join("---" for _ in results) + " |")
    for key, name in (
        ("decisions", "decisions in the window"),
        ("rolled_up_days", "days read from rollups"),
        ("api_cold", "JSON API, cold (s, median of fresh processes)"),
        ("api_warm", "JSON API, warm (s, median / max)"),
        ("admin_cold", "admin page, cold (s)"),
        ("admin_warm", "admin page, warm (s, median / max)"),
        ("rebuild", "rebuilding 20 days of rollups (s)"),
    ):
        cells = []
        for r in results.values():
            value = r[key]
            if value is None:
                cells.append("—")
            elif isinstance(value, tuple):
                cells.append(f"{value[0]:.3f} / {value[1]:.3f}")
            elif isinstance(value, float):
                cells.append(f"{value:.3f}")
            else:
                cells.append(f"{value:,}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

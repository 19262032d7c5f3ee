from __future__ import annotations

import io
from decimal import Decimal

import pytest
from django.core.management import call_command

from rules.models import ConfigRevision, Threshold
from rules.services import records

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("demo_setup", *args, stdout=out)
    return out.getvalue()


def test_demo_setup_loads_once_then_keeps_operators_changes_until_reset():
    first = run()
    assert "loaded as revision 1" in first
    assert "Agent token:  arb_" in first and "password " in first
    assert ConfigRevision.objects.get().created_by.username == "admin"

    limit = Threshold.objects.get(key="min_confidence")
    limit.value = Decimal("0.7")
    records.threshold_save(threshold=limit, actor=None, reason="ops tuning")
    again = run()
    assert "keeping it" in again
    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.7")

    run("--reset")
    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.65")
    assert run().count("already loaded") == 1

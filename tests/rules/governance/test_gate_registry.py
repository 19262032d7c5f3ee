"""The four-eyes gate registers with the config-change seam at start-up; without one, nothing is written."""

from __future__ import annotations

import pytest

from rules.config import records
from rules.config.revisions import _registered_gate
from rules.governance.gate import GATE
from rules.models import ConfigRevision, Threshold


def test_the_app_registers_governances_gate():
    assert _registered_gate() is GATE


def test_a_change_is_refused_when_no_gate_is_registered(demo, editor, monkeypatch):
    monkeypatch.setattr("rules.config.revisions._gate", None)
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.description = "Refunds above it go to a person."
    revisions = ConfigRevision.objects.count()
    with pytest.raises(RuntimeError, match="No configuration gate"):
        records.threshold_save(threshold=threshold, actor=editor, reason="wording")
    assert Threshold.objects.get(key="auto_refund_limit").description != threshold.description
    assert ConfigRevision.objects.count() == revisions

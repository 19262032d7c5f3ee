"""One compiled engine per revision per process, and new revisions picked up without a restart."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import override_settings

from rules.config import records
from rules.config.runtime import EngineCache
from rules.models import Threshold
from tests.support import factories as f

pytestmark = pytest.mark.django_db


@override_settings(ARBITER_REVISION_CHECK_SECONDS=0.5)
def test_compiled_once_per_revision_and_a_new_revision_is_seen_after_the_check_interval(clock, actor):
    cache = EngineCache()
    f.threshold()
    first = cache.current()
    assert first.revision == 1
    assert cache.current() is first  # compiled once, shared

    t = Threshold.objects.get()
    t.value = Decimal("0.7")
    records.threshold_save(threshold=t, actor=actor, reason="raise")
    clock.now += 0.2
    assert cache.current() is first  # within the interval no query is made
    clock.now += 0.4
    second = cache.current()
    assert second.revision == 2
    assert second.thresholds["min_confidence"] == 0.7
    assert cache.for_revision(1).thresholds["min_confidence"] == 0.65


def test_before_any_revision_there_is_an_empty_engine():
    cache = EngineCache()
    assert cache.current().revision == 0
    assert cache.current().points == {}


def test_a_recreated_database_never_gets_a_stale_engine_with_the_same_number(actor):
    cache = EngineCache()
    f.threshold(value="0.5")
    before = cache.current()
    # Same revision number, different content (as after a restore): keyed by digest, so recompiled.
    from rules.models import ConfigRevision

    revision = ConfigRevision.objects.get()
    revision.snapshot = {**revision.snapshot, "thresholds": [{"key": "min_confidence", "value": 0.9}]}
    revision.digest = "0" * 64
    revision.save()
    after = cache.current()
    assert after is not before and after.thresholds["min_confidence"] == 0.9

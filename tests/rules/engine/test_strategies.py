"""The property tests cover every kind of condition the engine registers."""

from __future__ import annotations

from rules.engine.conditions import KINDS
from tests.support import strategies as s


def test_every_registered_kind_of_condition_has_a_strategy():
    assert set(s.CONDITIONS) == set(KINDS)

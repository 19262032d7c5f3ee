from __future__ import annotations

import copy

import pytest

from tests.support.engine import SEED_SNAPSHOT


@pytest.fixture
def seed_snapshot():
    return copy.deepcopy(SEED_SNAPSHOT)

from __future__ import annotations

import copy
import datetime as dt

import pytest

from rules.config.document.validate import config_from_yaml
from tests.support import DEMO

# The seed's after-sales configuration, as a snapshot (the shape ``config_document`` produces), read from
# the demo file that reproduces it: the engine tests and the demo cannot drift apart.
SEED_SNAPSHOT = config_from_yaml(DEMO.read_text(encoding="utf-8"))

NOON_UTC = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def seed_snapshot():
    return copy.deepcopy(SEED_SNAPSHOT)

"""rules 0019: a keyword list that existed before issue 21's evasion options keeps matching as it did (every
new option off), while a list created afterwards has them on (pinyin only when it asks). SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from rules.engine.evasion import EVASION_DEFAULTS, EVASION_OPTIONS
from rules.models import KeywordList

BEFORE = [("rules", "0018_change_request_event_params")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_lists_from_before_get_the_options_off_and_new_lists_get_the_defaults():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate(BEFORE)
        old.get_model("rules", "KeywordList").objects.create(key="old_list", match_mode="substring")
        _migrate(latest)
        migrated = KeywordList.objects.get(key="old_list")
        assert {o: getattr(migrated, o) for o in EVASION_OPTIONS} == dict.fromkeys(EVASION_OPTIONS, False)
        new = KeywordList(key="new_list")
        assert {o: getattr(new, o) for o in EVASION_OPTIONS} == EVASION_DEFAULTS
    finally:
        _migrate(latest)

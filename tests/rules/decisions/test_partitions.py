"""The decision log's monthly partitions on PostgreSQL: created ahead, DEFAULT split out, months dropped.

PostgreSQL only (SQLite has no partitioned tables: there the log is one table and retention deletes
rows, tests/rules/decisions/test_retention.py); CI runs these on PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly, Transition
from agents.sessions.services import session_create, session_move
from rules.decisions.decide import decision_record_insert
from rules.decisions.partitions import (
    DEFAULT_PARTITION,
    TABLE,
    decision_log_partitioned,
    decision_log_partitions,
    decision_log_partitions_ensure,
)
from rules.decisions.retention import decision_log_purge
from rules.models import DecisionIdempotencyKey, DecisionRecord
from rules.tasks import decision_log_partitions_ensure as ensure_task
from tests.support import agent_api

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the log is partitioned on PostgreSQL only (SQLite: one table)"
    ),
]


def at(year: int, month: int, day: int = 1, hour: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, tzinfo=dt.UTC)


def log(created_at: dt.datetime, *, agent_id: int | None = None, key: str = "") -> DecisionRecord:
    record = DecisionRecord(
        created_at=created_at,
        point="refund_approval",
        agent_id=agent_id,
        agent_name="support_bot",
        decision="auto_approve",
        ruled_by="default",
        revision=1,
        idempotency_key=key,
    )
    decision_record_insert(record=record)
    return record


def home(record: DecisionRecord) -> str:
    """The partition a logged row is stored in."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT tableoid::regclass::text FROM "{TABLE}" WHERE id = %s', [record.pk])  # noqa: S608
        return cursor.fetchone()[0]


def tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind IN ('r', 'p')", [f"{TABLE}%"])
        return {name for (name,) in cursor.fetchall()}


def months() -> list[str]:
    return [p.name.removeprefix(f"{TABLE}_p") for p in decision_log_partitions()]


def test_the_migrated_log_is_partitioned_with_this_month_and_two_ahead():
    assert decision_log_partitioned()
    assert DEFAULT_PARTITION in tables()
    today = dt.datetime.now(dt.UTC)
    # The migration created them; the beat task finds nothing to do today.
    assert f"{today:%Y_%m}" in months()
    assert len(months()) >= 3
    assert ensure_task.apply().get() == []
    assert ensure_task.name == "rules.tasks.decision_log_partitions_ensure"


def overruled_indexes() -> dict[str, tuple[str, bool]]:
    """Each table of the log that has the overruled-decisions index (migration rules 0017): its name, valid?"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.relname, i.relname, x.indisvalid FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE t.relname LIKE %s AND pg_get_indexdef(x.indexrelid) LIKE %s",
            [f"{TABLE}%", "%(session_id, created_at DESC) WHERE (overridden AND%"],
        )
        return {table: (index, valid) for table, index, valid in cursor.fetchall()}


def test_the_overruled_index_is_built_on_every_partition_and_on_new_ones():
    """Built partition by partition (CONCURRENTLY) and attached: the parent's index is valid only once
    every partition's is attached, and a month created later gets it from the parent."""
    before = overruled_indexes()
    assert before[TABLE] == ("decision_session_overruled_idx", True)
    assert set(before) == tables()
    # Named by the migration, partition by partition: not created through the parent in one blocking build.
    assert all(index == f"{table}_overruled" and valid for table, (index, valid) in before.items() if table != TABLE)
    decision_log_partitions_ensure(now=at(2034, 3, 1))
    after = overruled_indexes()
    assert after[f"{TABLE}_p2034_03"][1] is True and all(valid for _, valid in after.values())


def test_partitions_are_created_ahead_once():
    assert decision_log_partitions_ensure(now=at(2031, 11, 20)) == [
        f"{TABLE}_p2031_11",
        f"{TABLE}_p2031_12",
        f"{TABLE}_p2032_01",
    ]
    assert decision_log_partitions_ensure(now=at(2031, 11, 20)) == []  # a second run: nothing more
    assert decision_log_partitions_ensure(now=at(2031, 12, 1)) == [f"{TABLE}_p2032_02"]
    record = log(at(2032, 1, 31, 23))
    assert home(record) == f"{TABLE}_p2032_01"


def test_an_insert_for_a_month_without_a_partition_lands_in_default_and_is_split_out():
    early, late = log(at(2033, 5, 1)), log(at(2033, 5, 31, 23), agent_id=7, key="k-1")
    assert home(early) == home(late) == DEFAULT_PARTITION
    other = log(at(2033, 8, 2))

    created = decision_log_partitions_ensure(now=at(2033, 5, 15))
    assert created == [f"{TABLE}_p2033_05", f"{TABLE}_p2033_06", f"{TABLE}_p2033_07", f"{TABLE}_p2033_08"]
    assert home(early) == home(late) == f"{TABLE}_p2033_05"
    assert home(other) == f"{TABLE}_p2033_08"
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{DEFAULT_PARTITION}"')  # noqa: S608
        assert cursor.fetchone()[0] == 0
    # Read back by id and by key as before.
    assert DecisionRecord.objects.get(pk=late.pk).idempotency_key == "k-1"
    assert DecisionRecord.objects.get(idempotency__agent_id=7, idempotency__key="k-1").pk == late.pk
    # The moved rows' month has the log's indexes, primary key (id, created_at) included.
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", [f"{TABLE}_p2033_05"])
        definitions = " ".join(d for (d,) in cursor.fetchall())
    assert "(id, created_at)" in definitions and "(point, created_at DESC)" in definitions


@pytest.fixture
def bot(demo) -> AgentRuntime:
    agent_api("support_bot")
    return AgentRuntime.objects.get(name="support_bot")


def test_retention_drops_whole_months_and_releases_what_points_at_them(bot, settings):
    settings.ARBITER_DECISION_RETENTION_DAYS = 30
    now = at(2019, 4, 15, 12)  # cutoff 2019-03-16 12:00: January and February go, March stays
    decision_log_partitions_ensure(now=at(2019, 1, 1))
    decision_log_partitions_ensure(now=now)
    january = log(at(2019, 1, 10), agent_id=bot.pk, key="jan")
    february = log(at(2019, 2, 28, 23), agent_id=bot.pk)
    march = log(at(2019, 3, 1), agent_id=bot.pk, key="mar")  # older than the cutoff, but its month is not
    april = log(at(2019, 4, 15), agent_id=bot.pk)
    # Anomalies and moves still inside the period that point at decisions about to go.
    anomaly = Anomaly.objects.create(agent=bot, code="invalid_candidate_output", decision=january)
    kept_anomaly = Anomaly.objects.create(agent=bot, code="invalid_candidate_output", decision=march)
    session = session_create(agent=bot, machine_key="after_sales", session_id="s-1")
    session_move(session, to="received", kind="decision", actor="support_bot", decision_id=february.pk)

    with CaptureQueriesContext(connection) as captured:
        assert decision_log_purge(now=now) == 2

    statements = [q["sql"] for q in captured.captured_queries]
    assert not [s for s in statements if s.upper().startswith('DELETE FROM "RULES_DECISIONRECORD')]
    assert [s for s in statements if s.startswith("DROP TABLE")] == [
        f'DROP TABLE "{TABLE}_p2019_01"',
        f'DROP TABLE "{TABLE}_p2019_02"',
    ]
    assert {f"{TABLE}_p2019_01", f"{TABLE}_p2019_02"}.isdisjoint(tables())
    assert set(DecisionRecord.objects.values_list("pk", flat=True)) == {march.pk, april.pk}
    # What pointed at a dropped decision lost the link (as a row delete's SET_NULL does); its key went.
    anomaly.refresh_from_db()
    assert anomaly.decision_id is None
    assert Transition.objects.get(session=session).decision_id is None
    assert Anomaly.objects.get(pk=kept_anomaly.pk).decision_id == march.pk
    assert list(DecisionIdempotencyKey.objects.values_list("key", flat=True)) == ["mar"]
    assert decision_log_purge(now=now) == 0  # idempotent


def test_a_month_left_detached_by_an_interrupted_sweep_is_dropped_by_the_next(bot):
    decision_log_partitions_ensure(now=at(2018, 1, 1))
    record = log(at(2018, 1, 5), agent_id=bot.pk)
    anomaly = Anomaly.objects.create(agent=bot, code="invalid_candidate_output", decision=record)
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE "{TABLE}" DETACH PARTITION "{TABLE}_p2018_01"')
    assert decision_log_purge(older_than_days=30, now=at(2018, 3, 15)) == 1
    assert f"{TABLE}_p2018_01" not in tables()
    anomaly.refresh_from_db()
    assert anomaly.decision_id is None


def test_pages_and_the_api_after_a_month_is_dropped(bot, admin_client):
    api = agent_api("api_bot")
    answer = api.post(
        "/api/v1/decisions",
        {"point": "refund_approval", "facts": {"refund_amount": 800}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="turn-1",
    )
    assert answer.status_code == 201
    kept = answer.json()["id"]
    api_bot = AgentRuntime.objects.get(name="api_bot")
    decision_log_partitions_ensure(now=at(2020, 1, 1))
    old = log(at(2020, 1, 2), agent_id=api_bot.pk)
    anomaly = Anomaly.objects.create(agent=api_bot, code="invalid_candidate_output", decision=old)

    assert decision_log_purge(older_than_days=30) >= 1

    assert api.get(f"/api/v1/decisions/{kept}").status_code == 200
    assert api.get(f"/api/v1/decisions/{old.pk}").json()["code"] == "not_found"
    # A retry with the kept decision's key is still answered from the log.
    again = api.post(
        "/api/v1/decisions",
        {"point": "refund_approval", "facts": {"refund_amount": 800}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="turn-1",
    )
    assert (again.status_code, again.json()["id"]) == (201, kept)
    assert admin_client.get(f"/admin/agents/anomaly/{anomaly.pk}/change/").status_code == 200
    assert admin_client.get("/admin/rules/decisionrecord/").status_code == 200
    assert admin_client.get(f"/admin/rules/decisionrecord/{kept}/change/").status_code == 200
    assert admin_client.get(f"/admin/rules/decisionrecord/{uuid.UUID(str(old.pk))}/change/").status_code == 302

"""Moving state machines into rules, and the decision log's agent key, keep every row and history row.

The database is migrated back to where it was before the move, filled through the historical models
the way a live installation would have been, and migrated forward again; the rows must all be there,
read through today's models. The same for rules 0015, which partitions the log on PostgreSQL and moves
the Idempotency-Keys to their own table. Runs on SQLite and on PostgreSQL (CI runs both).
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly, Session, Transition
from agents.tools.models import ToolAttempt
from rules.models import CandidateRequestCount, DecisionIdempotencyKey, DecisionRecord, StateMachine

BEFORE = [("rules", "0005_decision_session_move"), ("agents", "0006_session_key_index")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _flow_machine(model):
    """The smallest machine a historical ``StateMachine`` model takes: start → done."""
    return model.objects.create(
        key="flow",
        states=["start", "done"],
        initial_state="start",
        handoff_state="start",
        terminal_states=["done"],
        transitions={"start": ["done"]},
    )


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_state_machines_and_the_log_keep_their_rows_across_the_move():
    latest = _latest()
    try:
        old = _migrate(BEFORE)
        OldMachine = old.get_model("agents", "StateMachine")
        OldHistory = old.get_model("agents", "HistoricalStateMachine")
        OldAgent = old.get_model("agents", "AgentRuntime")
        OldSession = old.get_model("agents", "Session")
        OldRecord = old.get_model("rules", "DecisionRecord")
        OldCount = old.get_model("rules", "CandidateRequestCount")
        machine = _flow_machine(OldMachine)
        OldHistory.objects.create(
            id=machine.pk,
            key="flow",
            states=["start", "done"],
            initial_state="start",
            handoff_state="start",
            terminal_states=["done"],
            transitions={"start": ["done"]},
            history_date=timezone.now(),
            history_type="+",
            history_change_reason="created before the move",
        )
        agent = OldAgent.objects.create(name="bot", token_hash="h" * 64, token_prefix="arb_x")
        OldSession.objects.create(
            agent=agent, key="s1", machine=machine, state="start", state_entered_at=timezone.now()
        )
        record_id = uuid.uuid4()
        OldRecord.objects.create(
            id=record_id,
            created_at=timezone.now(),
            point="p",
            agent=agent,
            agent_name="bot",
            decision="yes",
            ruled_by="default",
            revision=1,
            idempotency_key="k1",
        )
        OldCount.objects.create(point="p", agent=agent, day=dt.date(2026, 11, 30), count=4)
        # A database from before the move has the model's content type (and permissions) under agents.
        ContentType.objects.filter(app_label="rules", model__in=["statemachine", "historicalstatemachine"]).delete()
        old_type = ContentType.objects.get_or_create(app_label="agents", model="statemachine")[0]
        Permission.objects.get_or_create(
            content_type=old_type, codename="change_statemachine", defaults={"name": "Can change state machine"}
        )

        _migrate(latest)
    finally:
        _migrate(latest)

    moved = StateMachine.objects.get(key="flow")
    assert moved.pk == machine.pk and moved.transitions == {"start": ["done"]}
    assert [h.history_change_reason for h in moved.history.all()] == ["created before the move"]
    session = Session.objects.get(key="s1")
    assert session.machine == moved and session.agent == AgentRuntime.objects.get(name="bot")
    record = DecisionRecord.objects.get(pk=record_id)
    assert (record.agent_id, record.agent_name, record.idempotency_key) == (agent.pk, "bot", "k1")
    count = CandidateRequestCount.objects.get(point="p")
    assert (count.agent_id, count.agent_name, count.count) == (agent.pk, "bot", 4)
    permission = Permission.objects.get(codename="change_statemachine")
    assert (permission.content_type.app_label, permission.content_type.model) == ("rules", "statemachine")
    # Still one idempotency key per agent: the key came along, into its own table (rules 0015).
    assert DecisionIdempotencyKey.objects.get(agent_id=agent.pk, key="k1").decision_id == record_id
    with pytest.raises(IntegrityError):
        DecisionIdempotencyKey.objects.create(
            agent_id=agent.pk, key="k1", decision_id=uuid.uuid4(), created_at=timezone.now()
        )


BEFORE_PARTITIONS = [("rules", "0011_keyword_evasion"), ("agents", "0009_rate_limit")]


def _log_shape() -> tuple[str, list[str]]:
    """PostgreSQL: the log's kind ('p' partitioned, 'r' plain) and its partitions."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = 'rules_decisionrecord'")
        kind = cursor.fetchone()[0]
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'rules_decisionrecord'::regclass ORDER BY 1"
        )
        return kind, [name for (name,) in cursor.fetchall()]


def _home(pk: uuid.UUID) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM rules_decisionrecord WHERE id = %s", [pk])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_log_keeps_its_rows_keys_and_links_when_it_is_partitioned_and_back():
    """rules 0015 on a log with rows: on PostgreSQL the table is rebuilt partitioned by month, with every
    row in its month; everywhere the Idempotency-Keys move to their table. Backwards and forwards again."""
    latest = _latest()
    postgres = connection.vendor == "postgresql"
    try:
        old = _migrate(BEFORE_PARTITIONS)
        OldAgent = old.get_model("agents", "AgentRuntime")
        OldAnomaly = old.get_model("agents", "Anomaly")
        OldRecord = old.get_model("rules", "DecisionRecord")
        agent = OldAgent.objects.create(name="bot", token_hash="h" * 64, token_prefix="arb_x")
        times = [
            dt.datetime(2024, 1, 15, tzinfo=dt.UTC),
            dt.datetime(2024, 3, 31, 23, 59, 59, tzinfo=dt.UTC),
            timezone.now(),
        ]
        ids = [uuid.uuid4() for _ in times]
        for i, (pk, at) in enumerate(zip(ids, times, strict=True)):
            OldRecord.objects.create(
                id=pk,
                created_at=at,
                point="p",
                agent_id=agent.pk,
                agent_name="bot",
                decision="yes",
                ruled_by="default",
                revision=1,
                idempotency_key=f"k{i}" if i else "",
                request_digest="d" * 64,
            )
        OldAnomaly.objects.create(agent=agent, code="invalid_candidate_output", decision_id=ids[1])

        _migrate(latest)
        assert set(DecisionRecord.objects.values_list("pk", flat=True)) == set(ids)
        assert DecisionRecord.objects.get(pk=ids[1]).created_at == times[1]
        assert dict(DecisionIdempotencyKey.objects.values_list("key", "decision_id")) == {"k1": ids[1], "k2": ids[2]}
        assert Anomaly.objects.get().decision_id == ids[1]
        with pytest.raises(IntegrityError):
            DecisionIdempotencyKey.objects.create(
                agent_id=agent.pk, key="k1", decision_id=uuid.uuid4(), created_at=timezone.now()
            )
        if postgres:
            kind, partitions = _log_shape()
            assert kind == "p"
            assert _home(ids[0]) == "rules_decisionrecord_p2024_01"
            assert _home(ids[1]) == "rules_decisionrecord_p2024_03"
            assert _home(ids[2]) == f"rules_decisionrecord_p{times[2]:%Y_%m}"
            assert "rules_decisionrecord_default" in partitions and len(partitions) == 2 + 3 + 1

        _migrate(BEFORE_PARTITIONS)
        if postgres:
            assert _log_shape() == ("r", [])
        back = _migrate(BEFORE_PARTITIONS).get_model("rules", "DecisionRecord")
        assert set(back.objects.values_list("pk", flat=True)) == set(ids)
        with pytest.raises(IntegrityError), transaction.atomic():  # the partial unique index is back
            back.objects.create(
                created_at=timezone.now(),
                point="p",
                agent_id=agent.pk,
                agent_name="bot",
                decision="no",
                ruled_by="default",
                revision=1,
                idempotency_key="k1",
            )
    finally:
        _migrate(latest)
    assert set(DecisionRecord.objects.values_list("pk", flat=True)) == set(ids)
    if postgres:
        assert _log_shape()[0] == "p"


@pytest.mark.django_db(transaction=True)
def test_sessions_waiting_in_the_handoff_state_get_their_reason():
    """agents 0013: a session that waits in its machine's handoff state without a reason (only the
    policy and the sweep set one before) gets it from the move that brought it there."""
    latest = _latest()
    try:
        # rules back too: its later columns on the machine (fields, events, guards) are not in this state.
        old = _migrate([("agents", "0012_i18n_labels"), ("rules", "0021_idempotency_key_every_write")])
        OldMachine = old.get_model("rules", "StateMachine")
        OldAgent = old.get_model("agents", "AgentRuntime")
        OldSession = old.get_model("agents", "Session")
        OldTransition = old.get_model("agents", "Transition")
        machine = OldMachine.objects.create(
            key="flow",
            states=["start", "person", "done"],
            initial_state="start",
            handoff_state="person",
            terminal_states=["done"],
            transitions={"start": ["person", "done"], "person": ["done"]},
        )
        agent = OldAgent.objects.create(name="bot", token_hash="h" * 64, token_prefix="arb_x")
        now = timezone.now()
        kinds = {"by_rule": "decision", "by_fallback": "fallback", "by_agent": "interrupt", "by_policy": "timeout"}
        for key, kind in kinds.items():
            session = OldSession.objects.create(
                agent=agent, key=key, machine=machine, state="person", seq=1, state_entered_at=now
            )
            OldTransition.objects.create(session=session, seq=1, from_state="start", to_state="person", kind=kind)
        OldSession.objects.filter(key="by_policy").update(handoff_reason="timeout")
        OldSession.objects.create(agent=agent, key="born_there", machine=machine, state="person", state_entered_at=now)
        OldSession.objects.create(agent=agent, key="elsewhere", machine=machine, state="start", state_entered_at=now)
        _migrate(latest)
    finally:
        _migrate(latest)
    assert dict(Session.objects.values_list("key", "handoff_reason")) == {
        "by_rule": "rule",
        "by_fallback": "fallback",
        "by_agent": "agent",
        "by_policy": "timeout",
        "born_there": "started",
        "elsewhere": "",
    }


@pytest.mark.django_db(transaction=True)
def test_moves_keys_join_the_agents_one_key_table():
    """agents 0014: every move's Idempotency-Key is copied into the agent's key table (a retry across the
    upgrade replays its move); where two sessions of one agent used one key, the earliest keeps it. The
    transitions keep their keys."""
    latest = _latest()
    try:
        old = _migrate([("agents", "0013_handoff_reason_backfill"), ("rules", "0021_idempotency_key_every_write")])
        OldMachine = old.get_model("rules", "StateMachine")
        OldAgent = old.get_model("agents", "AgentRuntime")
        OldSession = old.get_model("agents", "Session")
        OldTransition = old.get_model("agents", "Transition")
        machine = _flow_machine(OldMachine)
        now = timezone.now()
        bot = OldAgent.objects.create(name="bot", token_hash="h" * 64, token_prefix="arb_x")
        other = OldAgent.objects.create(name="other", token_hash="g" * 64, token_prefix="arb_y")
        for agent, key, when in ((bot, "a", now), (bot, "b", now + dt.timedelta(seconds=1)), (other, "a", now)):
            session = OldSession.objects.create(
                agent=agent, key=key, machine=machine, state="done", seq=1, state_entered_at=when
            )
            OldTransition.objects.create(
                session=session,
                seq=1,
                from_state="start",
                to_state="done",
                idempotency_key="turn-1",
                request_digest="d" * 64,
            )
            OldTransition.objects.filter(session=session).update(created_at=when)
        _migrate(latest)
    finally:
        _migrate(latest)
    keys = DecisionIdempotencyKey.objects.order_by("agent_id")
    assert [(k.agent_id, k.key, k.operation, k.decision_id, k.target) for k in keys] == [
        (AgentRuntime.objects.get(name="bot").pk, "turn-1", "transition", None, {"session_id": "a", "seq": 1}),
        (AgentRuntime.objects.get(name="other").pk, "turn-1", "transition", None, {"session_id": "a", "seq": 1}),
    ]
    assert {k.request_digest for k in keys} == {"d" * 64}


@pytest.mark.django_db(transaction=True)
def test_existing_events_are_numbered_and_new_ones_follow_them():
    """rules 0027 and agents 0018: every existing event row gets a sequence id (a result already in gets
    one for it too), each table's in its time order, and what is written afterwards numbers after them all
    (SQLite's counter row is moved past the numbers given out)."""
    latest = _latest()
    try:
        old = _migrate([("agents", "0017_attempt_outcome_label"), ("rules", "0026_tool_contract_permissions")])
        OldMachine = old.get_model("rules", "StateMachine")
        OldAgent = old.get_model("agents", "AgentRuntime")
        OldSession = old.get_model("agents", "Session")
        OldTransition = old.get_model("agents", "Transition")
        OldAnomaly = old.get_model("agents", "Anomaly")
        OldCall = old.get_model("agents", "ToolCall")
        OldAttempt = old.get_model("agents", "ToolAttempt")
        machine = _flow_machine(OldMachine)
        now = timezone.now()
        bot = OldAgent.objects.create(name="bot", token_hash="h" * 64, token_prefix="arb_x")
        session = OldSession.objects.create(
            agent=bot, key="s", machine=machine, state="done", seq=2, state_entered_at=now
        )
        for seq in (2, 1):  # written out of order: numbered by seq
            OldTransition.objects.create(session=session, seq=seq, from_state="start", to_state="done")
        for i in range(3):
            OldAnomaly.objects.create(agent=bot, session_id="s", code=f"c{i}")
        call = OldCall.objects.create(
            session=session,
            agent=bot,
            operation_id="op",
            tool="t",
            state="start",
            risk="read_only",
            input_digest="d" * 64,
            status="done",
            attempt=2,
        )
        for n, finished in ((1, now), (2, None)):
            OldAttempt.objects.create(
                call=call,
                attempt=n,
                tool="t",
                started_at=now,
                deadline=now,
                finished_at=finished,
                outcome="error" if finished else "",
            )
        _migrate(latest)
    finally:
        _migrate(latest)
    moves = list(Transition.objects.filter(session__key="s").order_by("seq"))
    anomalies = list(Anomaly.objects.filter(session_id="s").order_by("pk"))
    numbers = [m.sequence_id for m in moves] + [a.sequence_id for a in anomalies]
    assert None not in numbers and len(set(numbers)) == len(numbers)
    assert [m.sequence_id for m in moves] == sorted(m.sequence_id for m in moves)
    assert [a.sequence_id for a in anomalies] == sorted(a.sequence_id for a in anomalies)
    first, second = ToolAttempt.objects.filter(call__operation_id="op").order_by("attempt")
    assert first.sequence_id < second.sequence_id < first.result_sequence_id  # the result: after every start
    assert second.result_sequence_id is None  # none came
    numbers += [first.sequence_id, second.sequence_id, first.result_sequence_id]
    assert len(set(numbers)) == len(numbers)
    new = Anomaly.objects.create(session_id="s", code="after")
    new.refresh_from_db()
    assert new.sequence_id > max(numbers)

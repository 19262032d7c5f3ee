"""The service-wide event sequence (decision_service.sequence): every event row gets its number from one
source when it is written — through the ORM and through the hand-written statements of the decide and
tool-call paths alike — so one session's events read in the order they happened across their tables.
Runs on SQLite (counter row and triggers) and on PostgreSQL (a SEQUENCE as the columns' default)."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.queue.models import QueueEvent
from agents.queue.services import queue_claim
from agents.sessions.models import Anomaly, Session, Transition
from agents.tools.models import ToolAttempt
from decision_service.sequence import ensure_event_sequence, sequenced_columns
from rules.models import DecisionRecord
from tests.support import agent_api, make_user
from tests.support.tool_calls import PHONE


@pytest.mark.django_db
def test_every_kind_of_event_is_numbered_in_the_order_it_was_written(demo):
    api = agent_api("seq_bot")
    assert (
        api.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "q1"}, format="json").status_code == 201
    )
    decided = api.post(
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "session_id": "q1",
            "apply": True,
            "input": "where is my parcel",
            "candidate": {"decision": "general_query", "confidence": 0.95},
        },
        format="json",
    )
    assert decided.status_code == 201, decided.content
    refused = api.post(
        "/api/v1/sessions/q1/transitions", {"to": "escalated", "expected_state": "received"}, format="json"
    )
    assert refused.status_code == 422, refused.content
    started = api.post(
        "/api/v1/sessions/q1/tool-calls",
        {"tool": "verify_phone", "input": {"phone": PHONE}, "expected_state": "received"},
        format="json",
    )
    assert started.status_code == 201, started.content
    operation = started.json()["operation_id"]
    # An error the contract does not declare: the call gives up and the session is handed to a person.
    failed = api.post(
        f"/api/v1/tool-calls/{operation}/result",
        {"error": {"code": "SOMETHING_UNDECLARED"}, "duration_ms": 5},
        format="json",
    )
    assert failed.status_code == 200, failed.content
    session = Session.objects.get(key="q1", agent__name="seq_bot")
    queue_claim(session_pk=session.pk, user=make_user("operator_q", "queue_operators"))

    decision = DecisionRecord.objects.get(session_id="q1")
    moves = list(Transition.objects.filter(session=session).order_by("seq"))
    attempt = ToolAttempt.objects.get(call__session=session)
    anomalies = list(Anomaly.objects.filter(session_id="q1").order_by("created_at", "pk"))
    claim = QueueEvent.objects.get(session=session)
    assert anomalies, "the refused move records an anomaly"

    # Written in this order: the decision, then its move (one statement on PostgreSQL: the log row first),
    # the refusal's anomaly, the attempt, then in one request its result, the undeclared error's anomaly
    # and the handoff, then the claim.
    assert [m.kind for m in moves] == ["decision", "tool_gave_up"]
    assert anomalies[0].code == "illegal_transition" and len(anomalies) == 2
    in_the_result = sorted([attempt.result_sequence_id, anomalies[1].sequence_id, moves[1].sequence_id])
    written = [
        decision.sequence_id,
        moves[0].sequence_id,
        anomalies[0].sequence_id,
        attempt.sequence_id,
        *in_the_result,
        claim.sequence_id,
    ]
    assert all(isinstance(n, int) for n in written), written
    assert written == sorted(written) and len(set(written)) == len(written), written


@pytest.mark.django_db
def test_an_attempt_s_result_is_numbered_when_it_comes_and_only_once(demo):
    api = agent_api("seq_bot")
    api.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "q2"}, format="json")
    started = api.post(
        "/api/v1/sessions/q2/tool-calls",
        {"tool": "verify_phone", "input": {"phone": PHONE}, "expected_state": "init"},
        format="json",
    ).json()
    attempt = ToolAttempt.objects.get(call__operation_id=started["operation_id"])
    assert attempt.sequence_id is not None and attempt.result_sequence_id is None
    api.post(
        f"/api/v1/tool-calls/{started['operation_id']}/result",
        {"output": {"verified": True}, "duration_ms": 3},
        format="json",
    )
    attempt.refresh_from_db()
    first = attempt.result_sequence_id
    assert first is not None and first > attempt.sequence_id
    # The same result again is a repeat: nothing is written, the number stays.
    api.post(
        f"/api/v1/tool-calls/{started['operation_id']}/result",
        {"output": {"verified": True}, "duration_ms": 3},
        format="json",
    )
    attempt.refresh_from_db()
    assert attempt.result_sequence_id == first


@pytest.mark.django_db
def test_after_migrate_every_sequenced_column_numbers_new_rows_even_after_its_trigger_was_lost():
    """SQLite rebuilds a table for many alterations, and the rebuilt table has no triggers: the
    post-migrate hook puts them back. (On PostgreSQL the column default does the inserts.)"""
    columns = sequenced_columns()
    assert {(t, c) for t, c, _ in columns} >= {
        ("rules_decisionrecord", "sequence_id"),
        ("agents_transition", "sequence_id"),
        ("agents_anomaly", "sequence_id"),
        ("agents_queueevent", "sequence_id"),
        ("agents_toolattempt", "sequence_id"),
        ("agents_toolattempt", "result_sequence_id"),
    }
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute('DROP TRIGGER "agents_anomaly_sequence_id_seq"')
    ensure_event_sequence()
    made = Anomaly.objects.create(session_id="lost", code="test")
    made.refresh_from_db()
    assert made.sequence_id is not None


@pytest.mark.django_db
def test_the_system_check_accepts_the_column_default():
    """``migrate`` and ``bin/serve`` run Django's system checks with the database: the sequence default
    must pass them (fields.E012 refuses an expression that does not declare itself allowed)."""
    from django.core.management import call_command

    call_command("check", databases=["default"])

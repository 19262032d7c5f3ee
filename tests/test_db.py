"""decision_service.db: the cursor the hot statements run on, prepared on the PostgreSQL server."""

from __future__ import annotations

import datetime as dt
import warnings

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.sessions.models import Anomaly, Session, Transition
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from decision_service.db import db_values, prepared_cursor
from rules.models import DecisionRecord

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL's")
def test_a_statement_is_prepared_once_whatever_the_size_of_its_numbers():
    # psycopg keys a prepared statement by its text and the types it sends, and would send these as
    # int2, int4 and int8: three forms of one statement, each prepared and planned.
    with prepared_cursor() as cursor:
        for n in (5, 100_000, 10**12):
            cursor.execute("SELECT %s::bigint + 1 AS arbiter_test_db", [n])
            assert cursor.fetchone() == (n + 1,)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parameter_types FROM pg_prepared_statements WHERE statement LIKE %s", ["%arbiter_test_db%"]
        )
        assert cursor.fetchall() == [(["bigint"],)]


def test_elsewhere_the_cursor_is_djangos_own():
    with prepared_cursor() as cursor:
        cursor.execute("SELECT %s + 1", [1])
        assert cursor.fetchone() == (2,)
    if connection.vendor != "postgresql":
        assert type(prepared_cursor()) is type(connection.cursor())


# db_values: the values a hot statement sends, read off the instance where the ORM would send them
# unchanged, and the ORM's way otherwise. Every field of the models the hot paths write, with values of
# every kind a field might hold (the right type or not, None, naive and aware times, enum members).
_AWARE = st.datetimes(timezones=st.just(dt.UTC))
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.booleans(),
    _AWARE,
    st.datetimes(),  # naive: the ORM makes it aware (and warns)
    st.sampled_from(list(ToolCallStatus)),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
_MODELS = (ToolCall, ToolAttempt, DecisionRecord, Session, Transition, Anomaly)


def _comparable(value: object) -> object:
    obj = getattr(value, "obj", _NOTHING)  # psycopg's Jsonb wrapper has no equality of its own
    if obj is not _NOTHING:
        return ("json", obj)
    # On PostgreSQL the ORM wraps a number in a sized int (psycopg's Int4, Int8): the prepared cursor sends
    # every int as int8 (decision_service.db), and the column takes it as the number it is.
    if isinstance(value, int) and not isinstance(value, bool):
        return (int, int(value))
    return (type(value), value)


_NOTHING = object()


@settings(max_examples=300, deadline=None)
@given(model=st.sampled_from(_MODELS), data=st.data(), add=st.booleans(), prefix=st.sampled_from(["", "c_"]))
def test_db_values_sends_what_the_orm_would_send(model, data, add, prefix):
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    instance = model()
    for f in fields:
        instance.__dict__[f.attname] = data.draw(_VALUES, label=f.attname)
    # Fields that set their own value (auto_now, auto_now_add) set it again on each call: not compared.
    compared = [f for f in fields if not (getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a naive time, made aware the ORM's way
        expected = {}
        for f in compared:
            try:
                expected[prefix + f.attname] = _comparable(f.get_db_prep_save(f.pre_save(instance, add), connection))
            except (TypeError, ValueError, ValidationError) as refused:
                expected[prefix + f.attname] = ("refused", type(refused))
        got = {}
        for f in compared:
            try:
                got[prefix + f.attname] = _comparable(
                    db_values([f], instance, add=add, prefix=prefix)[prefix + f.attname]
                )
            except (TypeError, ValueError, ValidationError) as refused:
                got[prefix + f.attname] = ("refused", type(refused))
    assert got == expected


def test_db_values_reads_a_whole_row_in_one_call():
    call = ToolCall(operation_id="op-1", agent_id=3, session_id=4, tool="verify_phone", state="init", attempt=1)
    call.status = ToolCallStatus.RUNNING
    fields = [f for f in ToolCall._meta.concrete_fields if not f.primary_key]
    values = db_values(fields, call, add=True, prefix="c_")
    assert list(values) == [f"c_{f.attname}" for f in fields]
    assert (values["c_operation_id"], values["c_agent_id"], values["c_status"]) == ("op-1", 3, "running")
    assert values["c_created_at"] is not None and call.created_at is not None  # auto_now_add, set as by save

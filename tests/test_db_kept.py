"""decision_service.db: the connection's kept cursors, the time loader they use, ``new_instance`` and
``quick_converters``."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import DataError, connection, models, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.sessions.models import Anomaly, Session, Transition
from agents.tools.models import ToolAttempt, ToolCall, ToolCallStatus
from decision_service.db import new_instance, prepared_cursor, quick_converters
from rules.models import DecisionRecord

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="kept cursors: PostgreSQL's")

_ONE = "SELECT %s::bigint + 1 AS arbiter_test_kept"
_TWO = "SELECT %s::bigint + 2 AS arbiter_test_kept"


def _run(sql: str, value: int) -> tuple[object, object]:
    """The answer, and the driver's cursor that gave it."""
    with prepared_cursor() as cursor:
        cursor.execute(sql, [value])
        answer = cursor.fetchone()
        return answer, cursor.cursor


@postgresql_only
def test_a_statement_runs_again_on_the_cursor_its_connection_kept_for_it():
    first, kept = _run(_ONE, 1)
    again, same = _run(_ONE, 41)
    other, different = _run(_TWO, 1)
    assert (first, again, other) == ((2,), (42,), (3,))
    assert same is kept and not kept.closed  # leaving the block did not close it
    assert different is not kept
    assert kept.connection is connection.connection


@postgresql_only
def test_a_kept_cursor_serves_on_after_an_error_and_errors_are_djangos():
    _, kept = _run(_ONE, 1)
    with pytest.raises(DataError), transaction.atomic():
        _run(_ONE, 2**63 - 1)  # bigint out of range: psycopg's error, translated as for any Django cursor
    answer, same = _run(_ONE, 5)
    assert answer == (6,) and same is kept


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_keeps_cursors_of_its_own():
    _, kept = _run(_ONE, 1)
    connection.close()
    answer, fresh = _run(_ONE, 1)
    assert answer == (2,)
    assert fresh is not kept and fresh.connection is connection.connection


@postgresql_only
def test_the_query_log_shows_a_kept_cursors_statement_as_written():
    with CaptureQueriesContext(connection) as captured:
        _run(_ONE, 1)
        _run(_ONE, 2)
    # The text sent, not the prepared statement's name that psycopg reports for it.
    assert [q["sql"] for q in captured.captured_queries] == [_ONE, _ONE]


_TIMES = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.sampled_from([dt.UTC])
) | st.datetimes(
    min_value=dt.datetime(1900, 1, 2),
    max_value=dt.datetime(2200, 1, 1),
    timezones=st.sampled_from([dt.timezone(dt.timedelta(hours=8)), dt.timezone(dt.timedelta(hours=-5, minutes=-30))]),
)


@postgresql_only
@settings(max_examples=200, deadline=None)
@given(value=_TIMES)
def test_a_kept_cursor_reads_times_as_djangos_cursor_does(value):
    sql = "SELECT %s::timestamptz AS arbiter_test_time, %s::timestamptz + interval '1 microsecond'"
    with prepared_cursor() as kept:
        kept.execute(sql, [value, value])
        got = kept.fetchone()
    with connection.cursor() as plain:
        plain.execute(sql, [value, value])
        expected = plain.fetchone()
    assert got == expected
    assert [v.tzinfo for v in got] == [v.tzinfo for v in expected]  # Django's zone, not merely the same instant


# new_instance: model(**values) by attribute name, made positionally.
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=10),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.booleans(),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.sampled_from(list(ToolCallStatus)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_MODELS = (ToolCall, ToolAttempt, DecisionRecord, Session, Transition, Anomaly)


def _state(instance: object) -> dict[str, object]:
    return {k: v for k, v in vars(instance).items() if k != "_state"}


@settings(max_examples=200, deadline=None)
@given(model=st.sampled_from(_MODELS), data=st.data())
def test_new_instance_makes_the_instance_the_keyword_way_makes(model, data):
    fields = model._meta.concrete_fields
    chosen = data.draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields)), label="fields")
    values = {f.attname: data.draw(_VALUES, label=f.attname) for f in chosen}
    quick, usual = new_instance(model, **values), model(**values)
    # A field whose default is made for each instance (a time, a UUID) holds a value of the same type.
    made = {f.attname for f in fields if f.attname not in values and callable(f.default)}
    assert {k: v for k, v in _state(quick).items() if k not in made} == {
        k: v for k, v in _state(usual).items() if k not in made
    }
    assert {k: type(getattr(quick, k)) for k in made} == {k: type(getattr(usual, k)) for k in made}
    assert set(_state(quick)) == set(_state(usual))
    assert (quick._state.adding, quick._state.db) == (True, None)


def test_new_instance_refuses_what_the_model_has_no_field_for():
    with pytest.raises(TypeError, match="no concrete fields session"):
        new_instance(ToolCall, session=None, tool="x")


@postgresql_only
def test_past_its_limit_a_connection_runs_a_new_statement_on_a_cursor_of_its_own(monkeypatch):
    from decision_service import db

    _run(_ONE, 1)
    monkeypatch.setattr(db, "_KEPT_MAX", len(getattr(connection.connection, db._KEPT)))
    answer, once = _run("SELECT %s::bigint + 3 AS arbiter_test_kept_past_the_limit", 1)
    assert answer == (4,) and once.closed  # made for that run and closed after it
    again, kept = _run(_ONE, 1)
    assert again == (2,) and not kept.closed  # the statements already kept are kept still


# quick_converters: a plain JSONField's column read as Django reads it.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_TEXTS = st.one_of(
    _JSON.map(json.dumps),
    _JSON.map(lambda v: json.dumps(v, indent=1)),
    _JSON.map(lambda v: f" {json.dumps(v)}\\n"),  # whitespace around: json.loads takes it
    _JSON.map(lambda v: "\ufeff" + json.dumps(v)),  # a byte order mark: json.loads refuses it
    _JSON.map(lambda v: json.dumps(v) + " x"),  # extra data
    st.sampled_from(["NaN", "-Infinity", "[NaN]", "", "{", "nul", "1e400", '"\\ud800"']),
    st.text(max_size=12),
    st.binary(max_size=8),
    st.none(),
)


@settings(max_examples=500, deadline=None)
@given(value=_TEXTS)
def test_a_plain_json_column_is_read_as_django_reads_it(value):
    field = Session._meta.get_field("context")
    [django_way] = field.get_db_converters(connection)
    [quick] = quick_converters([django_way])
    assert quick is not django_way
    col = field.get_col(Session._meta.db_table)

    def outcome(convert):
        try:
            return convert(value, col, connection)
        except ValueError as refused:  # undecodable bytes: refused alike
            return type(refused)

    expected, got = outcome(django_way), outcome(quick)
    assert json.dumps(got, default=repr) == json.dumps(expected, default=repr)  # NaN equals NaN here
    assert type(got) is type(expected)


def test_only_a_plain_json_fields_converter_is_replaced():
    class Decoded(json.JSONDecoder):
        pass

    own = models.JSONField(decoder=Decoded)
    other = Session._meta.get_field("created_at")
    converters = [own.from_db_value, *other.get_db_converters(connection), str]
    assert quick_converters(converters) == converters

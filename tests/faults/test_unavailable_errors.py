"""Which database errors mean "unavailable" (503 database_unavailable) and which stay what they were.

Real errors: psycopg's own, raised by connecting to a port nothing listens on, and Django's wrapping of
them; SQLite's for a missing table. No server is needed.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import DatabaseError, connection
from django.db import OperationalError as DjangoOperationalError
from psycopg import errors as pg_errors

from decision_service.api.errors import database_unavailable
from tests.support.faults import free_port


def test_a_refused_connection_is_unavailable_raw_and_as_django_wraps_it():
    with pytest.raises(psycopg.OperationalError) as raised:
        psycopg.connect(host="127.0.0.1", port=free_port(), user="postgres", connect_timeout=2)
    assert raised.value.sqlstate is None
    assert database_unavailable(raised.value)
    try:
        raise DjangoOperationalError(*raised.value.args) from raised.value
    except DjangoOperationalError as wrapped:
        assert database_unavailable(wrapped)


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (pg_errors.AdminShutdown, True),  # 57P01: pg_ctl stop -m fast, a failover
        (pg_errors.CannotConnectNow, True),  # 57P03: starting up, recovering
        (pg_errors.TooManyConnections, True),  # 53300
        (pg_errors.ConnectionFailure, True),  # 08006
        (pg_errors.DeadlockDetected, False),  # 40P01: the query's fault, not the server's
        (pg_errors.SerializationFailure, False),
        (pg_errors.UndefinedTable, False),
    ],
)
def test_psycopg_errors_by_sqlstate(error, unavailable):
    assert database_unavailable(error("x")) is unavailable


@pytest.mark.django_db
def test_an_ordinary_database_error_is_not_unavailable():
    with pytest.raises(DatabaseError) as raised, connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table_here")
    assert not database_unavailable(raised.value)

"""decision_service.db: the cursor the hot statements run on, prepared on the PostgreSQL server."""

from __future__ import annotations

import pytest
from django.db import connection

from decision_service.db import prepared_cursor

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

"""Concurrent requests to pytest-django's live server on SQLite, with a connection each.

pytest-django's SQLite test database lives in memory, and its live server hands that one connection to
every request thread, interleaving their transactions on it (Django documents the hazard; two decides
at once fail with "database table is locked"). Concurrent requests only mean something with a
connection each, as a deployed server has: ``connection_per_request`` copies the test database to a
file and gives the test and every request thread their own connection to it while it is open. On
PostgreSQL it does nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections


class _ConnectionPerRequest:
    """Stands in for the live server's ``connections_override``: each request thread gets its own."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __bool__(self) -> bool:
        return True

    def items(self) -> list[tuple[str, Any]]:
        return [(DEFAULT_DB_ALIAS, self.make())]


@contextmanager
def connection_per_request(live_server: Any, path: Path) -> Iterator[None]:
    if connection.vendor != "sqlite":
        yield
        return
    memory = connections[DEFAULT_DB_ALIAS]
    memory.ensure_connection()
    target = sqlite3.connect(path)
    memory.connection.backup(target)
    target.close()
    settings_dict = {**memory.settings_dict, "NAME": str(path)}

    def make() -> Any:
        return memory.__class__(settings_dict, DEFAULT_DB_ALIAS)

    httpd = live_server.thread.httpd
    saved = httpd.connections_override
    httpd.connections_override = _ConnectionPerRequest(make)
    # A thread a request starts (the long poll's watcher) opens its connection from the settings.
    saved_settings = connections.settings[DEFAULT_DB_ALIAS]
    connections.settings[DEFAULT_DB_ALIAS] = settings_dict
    mine = make()
    connections[DEFAULT_DB_ALIAS] = mine
    try:
        yield
    finally:
        connections.settings[DEFAULT_DB_ALIAS] = saved_settings
        httpd.connections_override = saved
        mine.close()
        connections[DEFAULT_DB_ALIAS] = memory


@contextmanager
def connection_per_thread(path: Path) -> Iterator[None]:
    """Every thread started meanwhile (a request's, a watcher's) and this one on a file copy of the
    SQLite test database, each with its own connection, as threads of a deployed server have; on
    PostgreSQL it does nothing."""
    if connection.vendor != "sqlite":
        yield
        return
    memory = connections[DEFAULT_DB_ALIAS]
    memory.ensure_connection()
    target = sqlite3.connect(path)
    memory.connection.backup(target)
    target.close()
    saved = connections.settings[DEFAULT_DB_ALIAS]
    connections.settings[DEFAULT_DB_ALIAS] = {**saved, "NAME": str(path)}
    mine = memory.__class__(connections.settings[DEFAULT_DB_ALIAS], DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = mine
    try:
        yield
    finally:
        connections.settings[DEFAULT_DB_ALIAS] = saved
        mine.close()
        connections[DEFAULT_DB_ALIAS] = memory

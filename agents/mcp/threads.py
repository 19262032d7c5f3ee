"""Sync Django work of the gateway's handlers (the ORM, the tool-call services), run off the event loop on
a pool of ``ARBITER_MCP_THREADS`` threads per process.

Each pool thread keeps its database connection between calls, as a request thread does; the connection is
checked before and after each call (``close_old_connections``: ``CONN_MAX_AGE`` and broken connections are
honoured as Django's request signals honour them). The threads live as long as the process, so at most
``ARBITER_MCP_THREADS`` connections per process are held for the gateway. The pool is made on first use in
each process (after gunicorn's fork).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections

T = TypeVar("T")

_lock = threading.Lock()
_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    pid = os.getpid()
    with _lock:
        pool = _pools.get(pid)
        if pool is None:
            _pools.clear()  # a parent's pool has no threads in this process
            pool = _pools[pid] = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, settings.ARBITER_MCP_THREADS), thread_name_prefix="arbiter-mcp"
            )
        return pool


def _with_connections(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` on the gateway's pool and await its answer."""
    loop = asyncio.get_running_loop()
    # The executor does not carry context variables to its threads (asyncio.to_thread would, on an
    # unbounded pool): a copy of the task's context is run there, the request's span and log record in it.
    work = functools.partial(contextvars.copy_context().run, _with_connections, fn, *args, **kwargs)
    return await loop.run_in_executor(_pool(), work)

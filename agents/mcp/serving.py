"""The MCP SDK's streamable HTTP session manager, run inside a WSGI worker: one asyncio event loop per
process, on a thread of its own, and each ``/mcp`` request handed to it as an ASGI call.

Why not an ASGI server beside gunicorn: ``bin/serve`` runs gthread workers in several processes, and
the gateway is stateless (``stateless=True``: no MCP session is kept between requests; the conversation's
state is Arbiter's session, in the database), so any worker of any process answers any request. Served
this way it has the same port, middleware, request log, metrics, tracing and probes as every other route,
and nothing new to deploy.

- The loop starts on the first request a process serves, never at import: gunicorn forks its workers
  after loading the app, and a thread does not survive a fork. ``_Runner`` remembers the pid it started
  in and starts again in a child. ``manager.run()`` is entered once on the loop, for the process's life.
- A request thread waits (``Future.result``) for the ASGI call's collected answer, at most
  ``wait_s``; the handlers run Django work in a bounded pool of threads of their own
  (``agents.mcp.threads``), never on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents.mcp.server import gateway_server


@dataclass
class Answer:
    """An ASGI response, collected."""

    status: int = 500
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


class _Runner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._manager: Any = None

    def _started(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        with self._lock:
            if self._pid != os.getpid() or self._loop is None:
                self._start()
            assert self._loop is not None
            return self._loop, self._manager

    def _start(self) -> None:
        ready = threading.Event()
        failed: list[BaseException] = []
        manager = StreamableHTTPSessionManager(
            app=gateway_server(),
            stateless=True,
            json_response=True,
            max_request_body_size=settings.ARBITER_MAX_REQUEST_BYTES,
        )

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            try:
                async with manager.run():
                    ready.set()
                    await asyncio.Event().wait()  # for the life of the process
            except BaseException as exc:  # pragma: no cover - the manager failed to start
                failed.append(exc)
                ready.set()
                raise

        thread = threading.Thread(target=asyncio.run, args=(main(),), name="arbiter-mcp-loop", daemon=True)
        thread.start()
        ready.wait(timeout=30)
        if failed or not ready.is_set():
            self._loop = None
            raise RuntimeError("The MCP gateway's event loop did not start.") from (failed[0] if failed else None)
        self._manager = manager
        self._pid = os.getpid()

    def call(self, scope: dict[str, Any], body: bytes, *, wait_s: float) -> Answer:
        """Run one ASGI request through the session manager; its answer once complete. The request
        thread's context variables (the request's trace span, its log record) go with it to the loop, and
        from there to the handlers' threads (``agents.mcp.threads``)."""
        loop, manager = self._started()
        context = contextvars.copy_context()
        future = asyncio.run_coroutine_threadsafe(_asgi_call(manager, scope, body, context), loop)
        try:
            return future.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise


runner = _Runner()


async def _asgi_call(manager: Any, scope: dict[str, Any], body: bytes, context: contextvars.Context) -> Answer:
    for var, value in context.items():  # this task's own copy: the SDK's tasks for the request inherit it
        var.set(value)
    answer = Answer()
    done = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the client stays connected until the whole answer is written
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")
            if not message.get("more_body", False):
                done.set()

    try:
        await manager.handle_request(scope, receive, send)
    finally:
        done.set()
    return answer

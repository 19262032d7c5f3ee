"""A real webhook receiver for the tests: an HTTP server on a thread of the test process, answering each
POST with the next status of a script (then the last one again) and keeping what it was sent."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.runtimes.models import AgentRuntime
from agents.webhooks.models import WebhookSubscription
from agents.webhooks.services import webhook_subscription_create


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    statuses: list[int]
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> int:
        with self.lock:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def kinds(self) -> list[str]:
        return [r.payload["type"] for r in list(self.received)]


@contextlib.contextmanager
def webhook_receiver(*statuses: int) -> Iterator[Receiver]:
    """A receiver answering ``statuses`` in turn (default: 204 to everything), at ``receiver.url``."""
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver = holder["r"]
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with receiver.lock:
                receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(receiver.answer())
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder["r"] = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hooks", statuses=list(statuses or [204]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder["r"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def subscribe(agent: AgentRuntime, url: str, *kinds: str, actor: Any = None) -> tuple[WebhookSubscription, str]:
    from agents.webhooks.models import EventKind

    return webhook_subscription_create(
        agent=agent, url=url, event_kinds=list(kinds or EventKind.values), actor=actor, reason="test subscribes"
    )


def wait_for(what: Callable[[], Any], *, seconds: float = 60.0, message: str = "") -> Any:
    """Poll ``what`` until it answers something true, or fail after ``seconds`` (a deadline, not a sleep)."""
    deadline = time.monotonic() + seconds
    while True:
        found = what()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(message or f"not within {seconds} s")
        time.sleep(0.05)

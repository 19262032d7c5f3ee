"""Tracing turned on in this process for a test, exporting to a receiver of ``tests.support.otlp``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.core.handlers.base import BaseHandler

from decision_service import tracing
from tests.support.otlp import Receiver


def _chains_rebuilt(live_server: Any) -> None:
    """The live server's handlers build their middleware chain again (it is built once, when the server
    starts, and TracingMiddleware is in it only if tracing was on then)."""
    app = live_server.thread.httpd.get_app()
    while app is not None:
        if isinstance(app, BaseHandler):
            app.load_middleware()
        app = getattr(app, "application", None)


@contextmanager
def tracing_to(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, *, live_server: Any = None, **variables: str
) -> Iterator[None]:
    """Tracing on as the OTEL_* ``variables`` (and the receiver's endpoint) configure it, off again after.
    Django test clients built inside the block, and ``live_server``, have the tracing middleware in their
    chain."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "20", **variables}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    provider = tracing.provider_from(environ)
    assert provider is not None
    tracing.install(provider)
    if live_server is not None:
        _chains_rebuilt(live_server)
    try:
        yield
    finally:
        tracing.install(None)  # shuts the provider down: what it holds is exported first
        if live_server is not None:
            _chains_rebuilt(live_server)

"""Tracing turned on in this process for a test, exporting to a receiver of ``tests.support.otlp``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from decision_service import tracing
from tests.support.otlp import Receiver


@contextmanager
def tracing_to(receiver: Receiver, monkeypatch: pytest.MonkeyPatch, **variables: str) -> Iterator[None]:
    """Tracing on as the OTEL_* ``variables`` (and the receiver's endpoint) configure it, off again after.
    Django test clients built inside the block have the tracing middleware in their chain."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "20", **variables}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    provider = tracing.provider_from(environ)
    assert provider is not None
    tracing.install(provider)
    try:
        yield
    finally:
        tracing.install(None)  # shuts the provider down: what it holds is exported first

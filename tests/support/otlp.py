"""A real OTLP/HTTP trace receiver for the tests: ``POST /v1/traces`` with the exporter's protobuf
``ExportTraceServiceRequest``, decoded with opentelemetry-proto into flat span records."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
KIND_SERVER = 2


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    status: int
    status_message: str
    resource: dict[str, Any]


class Receiver:
    """What the server received; ``spans()`` waits (polling, with a deadline) for what a test expects."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[ReceivedSpan] = []
        self.requests = 0
        self.content_types: list[str] = []
        self.url = ""

    def add(self, body: bytes, content_type: str) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            kind=s.kind,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            status=s.status.code,
                            status_message=s.status.message,
                            resource=resource,
                        )
                    )
        with self.lock:
            self.requests += 1
            self.content_types.append(content_type)
            self.received.extend(spans)

    def spans(self, *, trace_id: str | None = None, at_least: int = 1, timeout: float = 10.0) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [s for s in self.received if trace_id is None or s.trace_id == trace_id]
            if len(found) >= at_least or time.monotonic() > deadline:
                return found

    def all(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.received)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.add(body, self.headers.get("Content-Type", ""))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 (a free port) in a thread; ``receiver.url`` is its base URL."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def traceparent(trace_id: str, span_id: str = "00f067aa0ba902b7", sampled: bool = True) -> str:
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"

"""bin/serve with the OTLP variables set: each gunicorn worker traces after its fork and exports to a real
receiver; the same server without them exports nothing and returns no ``traceparent``."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from decision_service.env import BASE_DIR
from tests.support.otlp import KIND_SERVER, otlp_receiver, traceparent
from tests.support.serve import free_port, manage, production_env, serve_until_listening

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _decide(base: str, token: str) -> tuple[int, dict[str, str]]:
    body = {
        "point": "intent_routing",
        "input": "close my order",
        "candidate": {"decision": "close_order", "confidence": 0.97},
    }
    request = urllib.request.Request(
        base + "/api/v1/decisions",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token}",
            "X-Forwarded-Proto": "https",
            "traceparent": traceparent(TRACE),
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, dict(response.headers)


def _served(tmp_path: Path, **otel: str) -> tuple[int, dict[str, str]]:
    port = free_port()
    env = production_env(
        tmp_path,
        ARBITER_ADDR=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        PYTHON=sys.executable,
    )
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")} | otel
    assert manage(env, "migrate", "--noinput").returncode == 0
    demo = manage(env, "demo_setup")
    assert demo.returncode == 0, demo.stderr
    token = next(w for w in demo.stdout.split() if w.startswith("arb_"))
    server = subprocess.Popen(
        [str(BASE_DIR / "bin" / "serve")],
        env={**env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")},
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        serve_until_listening(server, port)
        return _decide(f"http://127.0.0.1:{port}", token)
    finally:
        server.terminate()  # gunicorn's graceful stop: each worker's provider exports what it holds on exit
        server.wait(timeout=60)


def test_bin_serve_exports_spans_joined_to_the_runtimes_trace(tmp_path):
    with otlp_receiver() as receiver:
        status, headers = _served(
            tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="arbiter-served"
        )
        assert status == 201
        assert headers["traceparent"].startswith(f"00-{TRACE}-")
        spans = {s.name: s for s in receiver.spans(trace_id=TRACE, at_least=2)}
    server = spans["POST /api/v1/decisions"]
    assert (server.kind, server.parent_span_id) == (KIND_SERVER, "00f067aa0ba902b7")
    assert headers["traceparent"] == f"00-{TRACE}-{server.span_id}-01"
    assert spans["arbiter.decide"].attributes["arbiter.decision"] == "close_order"
    assert server.resource["service.name"] == "arbiter-served"
    assert receiver.content_types[0] == "application/x-protobuf"


def test_bin_serve_without_otel_variables_traces_nothing(tmp_path):
    with otlp_receiver() as receiver:
        # The receiver listens, but nothing names it: tracing stays off.
        status, headers = _served(tmp_path, OTEL_SERVICE_NAME="arbiter-served")
        assert status == 201
        assert "traceparent" not in headers
        assert receiver.requests == 0

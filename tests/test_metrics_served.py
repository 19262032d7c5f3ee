"""``/metrics`` and the request log under bin/serve: two gunicorn workers, real HTTP, the demo loaded.

The counts must be the sum over both workers (prometheus-client's multiprocess mode, set up by bin/serve),
exactly: every request's answer says what it should have counted, and the scrape must say the same. The
log lines (JSON, the production default) tell which worker answered each request, by pid.

On PostgreSQL the server uses this test's own database (a transactional test: it is emptied afterwards);
on SQLite, a file of its own.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from decision_service.env import BASE_DIR
from tests.support.serve import free_port, manage, production_env

METRICS_TOKEN = "metrics-" + "t" * 32
INPUT_MARKER = "秘密标记 please refund"
FACT_VALUE = 987654.25
QUERY_MARKER = "qs-marker-9931"

PREPARE = """
import json
from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
config_import(text=open({demo!r}, encoding="utf-8").read(), source="demo", actor=None, reason="metrics test")
_, token = agent_create(name="metrics_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="test")
_, limited = agent_create(
    name="limited_bot", point_keys=["intent_routing"], rate_per_minute=1, rate_burst=1, actor=None, reason="test"
)
print(json.dumps({{"token": token, "limited": limited}}))
"""


def _database_url(tmp_path: Path) -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return f"sqlite:///{tmp_path / 'arbiter.sqlite3'}"


def _http(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    source: str = "127.0.0.1",
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        data = None if body is None else json.dumps(body).encode()
        sent = {**(headers or {}), **({"Content-Type": "application/json"} if data is not None else {})}
        conn.request(method, path, data, sent)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def _samples(raw: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(raw.decode())
        for s in family.samples
    }


def _value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _log_lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.startswith("{"):
            lines.append(json.loads(text))
    return lines


@pytest.fixture
def served(tmp_path, transactional_db):
    """bin/serve with two workers on a free port; yields (port, tokens, log file, the gunicorn master's pid).
    Stopped afterwards."""
    port = free_port()
    env = production_env(
        tmp_path,
        DATABASE_URL=_database_url(tmp_path),
        ARBITER_ADDR=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="2",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        ARBITER_MIGRATE="0",
        ARBITER_METRICS_ALLOWED_CIDRS="127.0.0.1/32",
        ARBITER_METRICS_TOKEN=METRICS_TOKEN,
        PYTHON=sys.executable,
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("ARBITER_LOG_FORMAT", None)
    if env["DATABASE_URL"].startswith("sqlite"):
        assert manage(env, "migrate", "--noinput").returncode == 0
    prepared = manage(env, "shell", "-c", PREPARE.format(demo=str(BASE_DIR / "demo" / "after_sales.yaml")))
    assert prepared.returncode == 0, prepared.stderr
    tokens = json.loads(prepared.stdout.strip().splitlines()[-1])
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(BASE_DIR / "bin" / "serve")], env=env, cwd=BASE_DIR, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "bin/serve did not start listening"
                time.sleep(0.3)
        yield port, tokens, log, server.pid  # bin/serve replaced itself with gunicorn's master
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _requests(tokens: dict[str, str], round_: int) -> list[tuple[str, str, str, Any, dict[str, str]]]:
    """(request id, method, path, body, headers): every kind of decision, moves, anomalies, refusals."""
    agent = {"Authorization": f"Bearer {tokens['token']}", "X-Forwarded-Proto": "https"}
    limited = {"Authorization": f"Bearer {tokens['limited']}", "X-Forwarded-Proto": "https"}
    candidate = {"decision": "general_query", "confidence": 0.9}
    decide = "/api/v1/decisions"
    kinds: list[tuple[str, str, Any, dict[str, str]]] = [
        ("POST", decide, {"point": "intent_routing", "input": "我要投诉", "candidate": candidate}, agent),
        ("POST", decide, {"point": "intent_routing", "input": "where is it", "candidate": candidate}, agent),
        (
            "POST",
            decide,
            {"point": "intent_routing", "input": "hi", "candidate": {**candidate, "confidence": 0.3}},
            agent,
        ),
        ("POST", decide, {"point": "intent_routing", "input": "hi"}, agent),  # asks for a candidate
        ("POST", decide, {"point": "intent_routing", "input": "hi", "candidate_raw": "no json here"}, agent),
        (
            "POST",
            decide,
            {"point": "intent_routing", "input": "hi", "candidate": {**candidate, "decision": "fly"}},
            agent,
        ),
        ("POST", decide, {"point": "refund_approval", "facts": {"refund_amount": 10}}, agent),
        ("POST", decide, {"point": "refund_approval", "facts": {"refund_amount": 900}}, agent),
        ("POST", "/api/v1/points", None, limited),  # wrong method, but rate-limited first after the burst
        ("GET", "/api/v1/points", None, limited),
    ]
    out = [(f"r{round_}-{i}", method, path, body, headers) for i, (method, path, body, headers) in enumerate(kinds)]
    session = f"s{round_}"
    out += [
        (f"r{round_}-s1", "POST", "/api/v1/sessions", {"machine": "after_sales", "session_id": session}, agent),
        (
            f"r{round_}-s2",
            "POST",
            f"/api/v1/sessions/{session}/transitions",
            {"to": "received", "expected_state": "init"},
            agent,
        ),
        (
            f"r{round_}-s3",
            "POST",
            f"/api/v1/sessions/{session}/transitions",
            {"to": "init", "expected_state": "received"},  # not allowed: refused, an anomaly
            agent,
        ),
    ]
    return out


def test_two_workers_count_every_request_once(served):
    port, tokens, log, master = served
    answers: dict[str, tuple[int, dict[str, Any]]] = {}
    sent: list[str] = []

    def send(item: tuple[str, str, str, Any, dict[str, str]]) -> None:
        rid, method, path, body, headers = item
        status, _, raw = _http(port, method, path, body, {**headers, "X-Request-ID": rid})
        answers[rid] = (status, json.loads(raw) if raw else {})

    pids: set[int] = set()
    for round_ in range(10):  # until both workers have answered decisions (bounded)
        batch = _requests(tokens, round_)
        # Sessions first (the moves need them), then the rest four at a time: the two workers share it.
        for item in batch[-3:]:
            send(item)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(send, batch[:-3]))
        sent += [item[0] for item in batch]
        by_id = {line.get("request_id"): line for line in _log_lines(log) if line.get("logger") == "arbiter.request"}
        pids = {by_id[rid]["pid"] for rid in sent if rid in by_id and by_id[rid]["route"] == "decision-create"}
        if len(pids) == 2 and round_ >= 1:
            break
    assert len(pids) == 2, "one worker answered every decision"

    # What the answers say was counted.
    decisions: Counter[tuple[str, str, str]] = Counter()
    needs = anomalies_unknown = anomalies_raw = limited = moves = refused_moves = created = 0
    for rid in sent:
        status, body = answers[rid]
        if status == 201 and "ruled_by" in body:
            decisions[(body["point"], body["ruled_by"], body["decision"])] += 1
            created += 1
        elif status == 200 and body.get("needs_candidate"):
            needs += 1
        if status == 429:
            limited += 1
        if rid.endswith("-5"):
            anomalies_unknown += 1
        if rid.endswith("-4"):
            anomalies_raw += 1
        if rid.endswith("-s2") and status == 200:
            moves += 1
        if rid.endswith("-s3") and status == 422:
            refused_moves += 1
    rounds = len(sent) // 13
    assert decisions[("intent_routing", "hard_rule", "human_handoff")] == 2 * rounds  # high-risk word; "fly"
    assert decisions[("intent_routing", "llm_candidate", "general_query")] == rounds
    assert decisions[("intent_routing", "hard_rule", "intent_clarify")] == rounds  # low confidence
    assert decisions[("intent_routing", "default", "intent_clarify")] == rounds  # raw output, no candidate
    assert decisions[("refund_approval", "default", "auto_approve")] == rounds
    assert decisions[("refund_approval", "hard_rule", "human_handoff")] == rounds
    assert needs == rounds and moves == rounds and refused_moves == rounds
    assert limited > 0  # no broker: each worker keeps its own bucket, which lets one request through

    headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    status, _, raw = _http(port, "GET", "/metrics", headers=headers)  # plain HTTP: not redirected
    assert status == 200, raw
    samples = _samples(raw)
    for (point, ruled_by, decision), n in decisions.items():
        assert _value(samples, "arbiter_decisions_total", point=point, ruled_by=ruled_by, decision=decision) == n
    assert sum(v for (name, _), v in samples.items() if name == "arbiter_decisions_total") == created
    assert _value(samples, "arbiter_needs_candidate_total", point="intent_routing") == needs
    assert _value(samples, "arbiter_decision_evaluation_seconds_count", point="intent_routing") == 6 * rounds
    assert _value(samples, "arbiter_decision_evaluation_seconds_count", point="refund_approval") == 2 * rounds
    assert _value(samples, "arbiter_anomalies_total", code="candidate_not_an_outcome") == anomalies_unknown
    assert _value(samples, "arbiter_anomalies_total", code="invalid_candidate_output") == anomalies_raw
    assert _value(samples, "arbiter_anomalies_total", code="illegal_transition") == refused_moves
    assert _value(samples, "arbiter_session_transitions_total", machine="after_sales", kind="move") == moves
    assert _value(samples, "arbiter_rate_limited_requests_total", agent="limited_bot") == limited
    assert (
        _value(
            samples, "arbiter_http_request_duration_seconds_count", route="decision-create", method="POST", status="201"
        )
        == created
    )
    # Gauges: the scrape itself is the one request in progress; both workers serve revision 1.
    assert _value(samples, "arbiter_http_requests_in_progress") == 1
    assert _value(samples, "arbiter_engine_revision", backend="native") == 1
    assert _value(samples, "arbiter_config_revision") == 1
    assert _value(samples, "arbiter_change_requests_open", state="pending") == 0

    # A worker that goes keeps its counts in the totals (gunicorn starts another in its place), and its
    # files of live gauges are removed by the child_exit hook.
    environ = Path(f"/proc/{master}/environ").read_bytes().split(b"\0")
    [directory] = [Path(v.split(b"=", 1)[1].decode()) for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    gone = min(pids)
    assert {f"counter_{gone}.db", f"gauge_livesum_{gone}.db"} <= {p.name for p in directory.iterdir()}
    os.kill(gone, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{gone}").exists():
        assert time.monotonic() < deadline, "the worker did not exit"
        time.sleep(0.1)

    def live_gauges_of_gone() -> list[str]:
        return [
            p.name for p in directory.iterdir() if p.name.startswith("gauge_live") and p.name.endswith(f"_{gone}.db")
        ]

    while live_gauges_of_gone() and time.monotonic() < deadline:  # the master reaps it, then runs child_exit
        time.sleep(0.1)
    assert live_gauges_of_gone() == []
    left = {p.name for p in directory.iterdir()}
    assert f"counter_{gone}.db" in left and f"histogram_{gone}.db" in left
    status, _, raw = _http(port, "GET", "/metrics", headers=headers)
    after = _samples(raw)
    for (point, ruled_by, decision), n in decisions.items():
        assert _value(after, "arbiter_decisions_total", point=point, ruled_by=ruled_by, decision=decision) == n
    assert _value(after, "arbiter_http_requests_in_progress") == 1


def test_who_may_read_the_metrics_over_http(served):
    port, _, _, _ = served
    token = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    # From another loopback address than the one allowed (127.0.0.1/32): refused even with the token.
    status, headers, raw = _http(port, "GET", "/metrics", headers=token, source="127.0.0.2")
    assert status == 403 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(raw)["code"] == "metrics_forbidden"
    status, headers, raw = _http(port, "GET", "/metrics")
    assert status == 401 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(raw)["code"] == "not_authenticated"
    assert _http(port, "GET", "/metrics", headers={"Authorization": "Bearer nope"})[0] == 401
    status, _, raw = _http(port, "GET", "/metrics", headers=token)
    assert status == 200 and b"arbiter_config_revision 1.0" in raw


def test_one_json_line_per_request_without_personal_data(served):
    port, tokens, log, _ = served
    agent = {"Authorization": f"Bearer {tokens['token']}", "X-Forwarded-Proto": "https"}
    body = {
        "point": "refund_approval",
        "input": INPUT_MARKER,
        "facts": {"refund_amount": FACT_VALUE},
        "candidate_raw": '{"decision": "auto_approve", "confidence": 0.99, "reason": "' + INPUT_MARKER + '"}',
    }
    status, headers, raw = _http(
        port, "POST", f"/api/v1/decisions?note={QUERY_MARKER}", body, {**agent, "X-Request-ID": "client-req.42"}
    )
    assert status == 201, raw
    assert headers["X-Request-ID"] == "client-req.42"
    decision = json.loads(raw)
    # Another request: no id of its own (a new one is made and echoed).
    status, headers, _ = _http(
        port, "GET", "/healthz", headers={"X-Request-ID": "not valid: spaces", "X-Forwarded-Proto": "https"}
    )
    assert status == 200 and len(headers["X-Request-ID"]) == 36

    # The workers write their lines after answering: wait (bounded) until both requests' lines are there.
    deadline = time.monotonic() + 30
    while True:
        try:
            lines = [line for line in _log_lines(log) if line.get("logger") == "arbiter.request"]
        except ValueError:  # a line caught half written
            lines = []
        if {"client-req.42", headers["X-Request-ID"]} <= {line["request_id"] for line in lines}:
            break
        assert time.monotonic() < deadline, "the request log lines never appeared"
        time.sleep(0.05)
    text = log.read_text(encoding="utf-8")
    [line] = [line for line in lines if line["request_id"] == "client-req.42"]
    assert line["method"] == "POST"
    assert line["path"] == "/api/v1/decisions"
    assert line["route"] == "decision-create"
    assert line["status"] == 201
    assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
    assert line["agent"] == "metrics_bot"
    assert line["point"] == "refund_approval"
    assert line["decision_id"] == decision["id"]
    assert line["level"] == "INFO" and isinstance(line["pid"], int) and line["time"].endswith("+00:00")
    [health] = [line for line in lines if line["request_id"] == headers["X-Request-ID"]]
    assert health["agent"] is None and health["point"] is None and health["route"] == "healthz"
    for secret in ("秘密标记", "please refund", str(FACT_VALUE), QUERY_MARKER, tokens["token"], "not valid"):
        assert secret not in text

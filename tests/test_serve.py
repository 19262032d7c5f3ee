"""Production serving: the deploy checks, and bin/serve answering a decision over real HTTP.

The served process gets its own SQLite file (a test database in this process is invisible to another
one) and is set up the way an operator would: migrations and the demo through manage.py, then bin/serve.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from decision_service.env import BASE_DIR
from tests.support.serve import free_port, manage, production_env


def test_check_deploy_with_production_settings_reports_nothing(tmp_path):
    done = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "DEBUG")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."
    assert done.stderr.strip() == ""


def test_production_settings_refuse_to_start_without_allowed_hosts(tmp_path):
    done = manage(production_env(tmp_path, ALLOWED_HOSTS=""), "check")
    assert done.returncode != 0
    assert "ALLOWED_HOSTS must be set" in done.stderr


def _request(url: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


HOST = "arbiter.example.com"


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_bin_serve_answers_a_decision_over_http(tmp_path):
    port = free_port()
    env = production_env(
        tmp_path,
        ARBITER_ADDR=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="2",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        PYTHON=sys.executable,
        # The name clients use; the probes below address the process as 127.0.0.1, as a kubelet does.
        ALLOWED_HOSTS=HOST,
    )
    assert manage(env, "migrate", "--noinput").returncode == 0
    demo = manage(env, "demo_setup")
    assert demo.returncode == 0, demo.stderr
    token = next(w for w in demo.stdout.split() if w.startswith("arb_"))

    server = subprocess.Popen(
        [str(BASE_DIR / "bin" / "serve")],
        # Metrics inside tmp_path: the hard kill at the end leaves no directory behind in /dev/shm.
        env={**env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")},
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                assert time.monotonic() < deadline, "bin/serve did not start listening"
                time.sleep(0.3)

        proxied = {"Host": HOST, "X-Forwarded-Proto": "https", "Authorization": f"Bearer {token}"}
        status, headers, raw = _request(
            base + "/api/v1/decisions",
            {
                "point": "intent_routing",
                "input": "close my order",
                "candidate": {"decision": "close_order", "confidence": 0.97},
            },
            {**proxied, "Content-Type": "application/json"},
        )
        assert status == 201, raw
        assert headers["Server"].startswith("gunicorn")
        assert headers["Strict-Transport-Security"].startswith("max-age=31536000")
        answer = json.loads(raw)
        assert answer["point"] == "intent_routing"
        assert answer["decision"] == "close_order"

        # Plain HTTP that did not come through the TLS proxy is sent to HTTPS.
        status, headers, _ = _request(base + "/api/v1/decisions", {"point": "intent_routing"}, {"Host": HOST})
        assert status == 301
        assert headers["Location"].startswith(f"https://{HOST}")
        # Probes and the metrics scraper talk to the server itself, by its address, not through the proxy:
        # answered whatever the Host, not redirected.
        for probe in ("/healthz", "/readyz", "/metrics"):
            status, _, raw = _request(base + probe)
            assert status == 200, (probe, raw)
        # Anything else for a host it does not serve: a problem under /api/, one warning line in the log.
        status, headers, raw = _request(base + "/api/v1/points", headers={"X-Forwarded-Proto": "https"})
        assert status == 400, raw
        assert headers["Content-Type"] == "application/problem+json"
        assert json.loads(raw)["code"] == "disallowed_host"

        # The admin's static files, collected by bin/serve and served by WhiteNoise with a hashed name.
        status, headers, raw = _request(base + "/admin/login/", headers={"Host": HOST, "X-Forwarded-Proto": "https"})
        assert status == 200
        css = next(part for part in raw.decode().split('"') if part.startswith("/static/admin/css/base."))
        status, headers, raw = _request(base + css, headers={"Host": HOST, "X-Forwarded-Proto": "https"})
        assert status == 200
        assert headers["Content-Type"].startswith("text/css")
        assert "immutable" in headers["Cache-Control"]

        # The master killed outright (no hook runs): its workers notice the new parent and leave on their
        # own, within gunicorn's timeout — no orphan keeps the port or the database connections.
        workers = _children(server.pid)
        assert len(workers) == 2
        server.kill()
        server.wait()
        deadline = time.monotonic() + 60
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "the workers outlived their master by a minute"
            time.sleep(0.2)
        log = server.stdout.read() if server.stdout else ""
        # Django's own DisallowedHost report is an error with a traceback: not one.
        assert "Invalid HTTP_HOST header" not in log and "Traceback" not in log, log
        assert log.count("not in ALLOWED_HOSTS") == 1, log
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

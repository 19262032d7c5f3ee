"""The client against the shapes issue 23's server part adds (being built in parallel): a ``session``
object in answers and refusals, the timeline's pages, the machine endpoint. A small stand-in server
answers them over real HTTP, with the shapes the issue names; once the server serves them, the live
tests of test_session_helper.py cover the same paths."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import arbiter_client as ac
import pytest

ENTRIES = [{"type": "move", "at": f"2026-01-01T00:00:0{i}Z", "seq": i} for i in range(5)]


def _session(state: str, seq: int, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "n-1",
        "machine": "after_sales",
        "state": state,
        "seq": seq,
        "allowed_transitions": ["closed"],
        "allowed_actions": ["query_order"],
        "handed_off": False,
        "handoff_reason": None,
        "claimed_by": None,
        "feedback": [],
        **extra,
    }


class NextServer(BaseHTTPRequestHandler):
    state = ("init", 0)
    seen: list[dict[str, Any]] = []

    def _answer(self, status: int, body: Any, kind: str = "application/json") -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/api/v1/sessions/n-1":
            self._answer(200, _session(*type(self).state))
        elif url.path == "/api/v1/sessions/n-1/timeline":
            after = int(parse_qs(url.query).get("after", ["-1"])[0])
            page = [e for e in ENTRIES if e["seq"] > after][:2]  # two entries a page
            self._answer(200, {"entries": page, "next": str(page[-1]["seq"]) if page else str(after)})
        elif url.path == "/api/v1/machines/after_sales":
            self._answer(200, {"key": "after_sales", "states": ["init", "received"], "timeouts": {}})
        else:
            self._answer(404, {"code": "not_found", "status": 404}, "application/problem+json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        state, seq = type(self).state
        if body.get("expected_state") != state:
            problem = {"code": "state_mismatch", "status": 409, "session": _session(state, seq)}
            self._answer(409, problem, "application/problem+json")
            return
        type(self).state = ("received", seq + 1)
        moved = _session("received", seq + 1, feedback=["the model answered off the whitelist twice"])
        self._answer(201, {"id": "d-1", "decision": "general_query", "needs_candidate": False, "session": moved})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def next_server() -> Iterator[str]:
    NextServer.state, NextServer.seen = ("init", 0), []
    server = ThreadingHTTPServer(("127.0.0.1", 0), NextServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_session_object_of_answers_and_refusals_is_taken_and_expected_state_sent(next_server) -> None:
    with ac.Arbiter(next_server, "arb_x", max_retries=0) as arbiter:
        s = arbiter.session(session_id="n-1")
        other = arbiter.session(session_id="n-1")
        s.decide("intent_routing", input="耳机坏了")
        assert NextServer.seen[-1]["expected_state"] == "init" and NextServer.seen[-1]["apply"] is True
        assert (s.state, s.seq, s.allowed_actions, s.feedback) == (
            "received",
            1,
            ["query_order"],
            ["the model answered off the whitelist twice"],
        )
        with pytest.raises(ac.StateMismatch) as stale:
            other.decide("intent_routing", input="耳机坏了")
        assert (stale.value.state, other.state, other.seq, other.allowed_actions) == (
            "received",
            "received",
            1,
            ["query_order"],
        )
        assert arbiter.apply_takes_expected_state is True
        assert arbiter.machine("after_sales")["states"] == ["init", "received"]

"""Agent runtimes talking to a running server over real HTTP (urllib, each with its own bearer token),
and the checks the end-to-end tests make on what they answer and on the session rows they leave."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from agents.runtimes.services import agent_create
from agents.sessions.models import Session, Transition
from rules.config.yaml_import import config_import
from tests.support import DEMO

PROBLEM = "application/problem+json"


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: Any

    @property
    def code(self) -> str | None:
        return self.body.get("code") if isinstance(self.body, dict) else None


@dataclass(frozen=True)
class Agent:
    """One agent runtime talking to the live server with its own bearer token."""

    url: str
    token: str
    name: str

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Answer(response.status, response.headers.get("Content-Type", ""), json.loads(response.read()))
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
            return Answer(error.code, error.headers.get("Content-Type", ""), body)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Answer:
        return self.call("POST", path, body, headers)

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    # -- the session API in the words of an agent runtime --

    def start(self, machine: str, session_id: str, **context: Any) -> Answer:
        return self.post("/api/v1/sessions", {"machine": machine, "session_id": session_id, "context": context})

    def move(self, session_id: str, to: str, expected: str, **extra: Any) -> Answer:
        headers = {"Idempotency-Key": extra.pop("key")} if "key" in extra else None
        return self.post(
            f"/api/v1/sessions/{session_id}/transitions", {"to": to, "expected_state": expected, **extra}, headers
        )

    def act(self, session_id: str, action: str, **params: Any) -> Answer:
        return self.post(f"/api/v1/sessions/{session_id}/actions", {"type": action, "params": params})

    def decide(self, session_id: str, point: str, *, apply: bool = True, **body: Any) -> Answer:
        return self.post("/api/v1/decisions", {"point": point, "session_id": session_id, "apply": apply, **body})

    def session(self, session_id: str) -> dict[str, Any]:
        answer = self.get(f"/api/v1/sessions/{session_id}")
        assert answer.status == 200, answer
        return answer.body


def assert_problem(answer: Answer, status: int, code: str) -> dict[str, Any]:
    assert (answer.status, answer.code) == (status, code), answer
    assert answer.content_type == PROBLEM, answer
    assert {"type", "title", "status", "detail", "code"} <= set(answer.body)
    assert answer.body["status"] == status
    return answer.body


def assert_gap_free(session_id: str) -> list[Transition]:
    """One row per move, numbered 1..seq; each move starts where the one before it ended."""
    session = Session.objects.get(key=session_id)
    rows = list(Transition.objects.filter(session=session).order_by("seq"))
    assert [t.seq for t in rows] == list(range(1, session.seq + 1))
    state = session.machine.initial_state
    for row in rows:
        assert row.from_state == state, f"move {row.seq} starts in {row.from_state}, not {state}"
        state = row.to_state
    assert state == session.state
    return rows


def candidate(decision: str, confidence: float, reason: str = "model says so") -> dict[str, Any]:
    return {"decision": decision, "confidence": confidence, "reason": reason}


def start_server(live_server: Any) -> tuple[Agent, Agent]:
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="e2e")
    points = ["intent_routing", "refund_approval"]
    _, token = agent_create(name="support_bot", point_keys=points, actor=None, reason="e2e")
    _, other = agent_create(name="other_bot", point_keys=points, actor=None, reason="e2e")
    return Agent(live_server.url, token, "support_bot"), Agent(live_server.url, other, "other_bot")


def call(
    server: tuple[str, str], method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, str | None, Any]:
    """One JSON request to ``server`` (its URL and a bearer token): (status, content type, body)."""
    url, token = server
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type"), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type"), json.loads(error.read())

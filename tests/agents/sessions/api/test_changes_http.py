"""``GET /api/v1/sessions/<id>/changes``: the long poll. At once when something is new; otherwise it waits
until another thread writes (real threads on the real database: the watcher thread reads what they
committed) or until ``wait`` runs out; refused ``wait`` and ``after`` as problems."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.sessions.changes import changes_watch
from agents.sessions.models import Session
from agents.sessions.timeline_apis import WAIT_MAX
from rules.governance.tokens import staff_token_create
from tests.support import agent_api, groups_ensure, post
from tests.support.live_sqlite import connection_per_thread


def changes(client: APIClient, key: str, **query: Any) -> dict:
    answer = client.get(f"/api/v1/sessions/{key}/changes", query)
    assert answer.status_code == 200, answer.content
    return answer.json()


def _ops() -> APIClient:
    groups_ensure()  # a transactional test starts without the groups the migrations made
    user = get_user_model().objects.create_user(username="ops", password="ops-pw-123", is_staff=True)
    user.groups.add(Group.objects.get(name="queue_operators"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


@pytest.mark.django_db
def test_what_is_there_already_comes_at_once_with_the_session(client):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    assert post(client, "/api/v1/sessions/s1/anomalies", {"code": "invalid_json"}).status_code == 201
    started = time.monotonic()
    body = changes(client, "s1", after=0, wait=WAIT_MAX)
    assert time.monotonic() - started < WAIT_MAX / 2
    (event,) = body["events"]
    assert (event["type"], event["code"]) == ("anomaly", "invalid_json")
    assert body["next"] == event["sequence_id"] and body["has_more"] is False
    assert body["session"]["state"] == "init" and body["session"]["handed_off"] is False
    # Nothing after it, no wait: an empty answer at once, ``next`` unchanged.
    again = changes(client, "s1", after=body["next"])
    assert (again["events"], again["next"]) == ([], body["next"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"wait": "31"}, "invalid_request"),
        ({"wait": "-1"}, "invalid_request"),
        ({"wait": "1.5"}, "invalid_request"),
        ({"after": "x"}, "invalid_cursor"),
        ({"after": "-3"}, "invalid_cursor"),
        ({"limit": "0"}, "invalid_request"),
        ({"timeout": "5"}, "invalid_request"),
    ],
)
def test_a_bad_wait_or_after_is_a_problem(client, query, code):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    answer = client.get("/api/v1/sessions/s1/changes", query)
    assert (answer.status_code, answer["Content-Type"]) == (422, "application/problem+json")
    assert answer.json()["code"] == code


@pytest.mark.django_db
def test_another_agents_session_is_unknown(client):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    answer = agent_api("other_bot").get("/api/v1/sessions/s1/changes", {"wait": "1"})
    assert (answer.status_code, answer.json()["code"]) == (404, "unknown_session")


@pytest.fixture
def threads(transactional_db, tmp_path):
    """Each thread with a connection of its own to the same database (SQLite: a file copy)."""
    with connection_per_thread(tmp_path / "arbiter.sqlite3"):
        yield


class Waiting(threading.Thread):
    """A ``changes`` request in a thread of its own (its own database connection)."""

    def __init__(self, client: APIClient, key: str, **query: Any) -> None:
        super().__init__(daemon=True)
        self.client, self.key, self.query = client, key, query
        self.body: dict | None = None
        self.took = 0.0

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.body = changes(self.client, self.key, **self.query)
        finally:
            self.took = time.monotonic() - started


def _until_waiting(count: int = 1) -> None:
    deadline = time.monotonic() + 20
    while len(changes_watch._waiters) < count:
        assert time.monotonic() < deadline, "the request never started waiting"
        time.sleep(0.01)


def test_a_waiting_request_answers_when_another_thread_writes(client, threads):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    after = changes(client, "s1")["next"]
    other = post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s2"})
    assert other.status_code == 201
    waiting = Waiting(client, "s1", after=after, wait=WAIT_MAX)
    waiting.start()
    _until_waiting()
    # Another session's event moves the sequence but is not this session's: still waiting.
    assert post(client, "/api/v1/sessions/s2/anomalies", {"code": "invalid_json"}).status_code == 201
    waiting.join(0.5)
    assert waiting.is_alive()
    moved = post(client, "/api/v1/sessions/s1/transitions", {"to": "intent_clarify", "expected_state": "init"})
    assert moved.status_code == 200, moved.content
    waiting.join(WAIT_MAX)
    assert not waiting.is_alive() and waiting.body is not None
    assert waiting.took < WAIT_MAX / 2
    (event,) = waiting.body["events"]
    assert (event["type"], event["to"]) == ("state_transition", "intent_clarify")
    assert waiting.body["session"]["state"] == "intent_clarify"
    assert not changes_watch._waiters


def test_a_runtime_waiting_learns_that_a_person_took_its_session(client, threads):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    handoff = post(client, "/api/v1/sessions/s1/transitions", {"to": "human_handoff", "expected_state": "init"})
    assert handoff.status_code == 200, handoff.content
    after = changes(client, "s1")["next"]
    waiting = Waiting(client, "s1", after=after, wait=WAIT_MAX)
    waiting.start()
    _until_waiting()
    queue_id = Session.objects.get(key="s1").pk
    assert _ops().post(f"/api/v1/queue/{queue_id}/claim", {}, format="json").status_code == 200
    waiting.join(WAIT_MAX)
    assert waiting.body is not None
    assert [(e["type"], e["kind"]) for e in waiting.body["events"]] == [("queue", "claim")]
    assert waiting.body["session"]["handed_off"] is True
    assert waiting.body["session"]["claimed_by"] == "ops"


def test_the_wait_runs_out_with_nothing_new(client, threads):
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": "s1"}).status_code == 201
    after = changes(client, "s1")["next"]
    started = time.monotonic()
    body = changes(client, "s1", after=after, wait=1)
    assert time.monotonic() - started >= 1
    assert (body["events"], body["next"]) == ([], after)
    assert not changes_watch._waiters

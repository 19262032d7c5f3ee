"""A breaker's ``ignore_codes`` through the tool-call API (DRF's test client), on each store: an ignored
failure does not move the breaker, another code does, and a half-open trial that ends with an ignored code
gives its trial slot back; the staff API lists the ignored codes as the spec describes them. The store is
chosen as a deployment chooses it (a Redis broker URL or none)."""

from __future__ import annotations

import time

import jsonschema
import pytest
import yaml

from agents.tools.breaker_backend import store
from agents.tools.gate import CLOSED, HALF_OPEN, OPEN, breaker_state
from rules.config.yaml_import import config_import
from tests.support import SPEC
from tests.support.breakers import HAS_REDIS, by_tool, staff
from tests.support.tool_calls import PHONE, TOOLS_DOCUMENT, check, report

BREAKER = {
    "failure_threshold": 2,
    "window_s": 60,
    "half_open_after_ms": 1,
    "trial_calls": 1,
    "ignore_codes": ["RATE_LIMIT_EXCEEDED"],
}
DOCUMENT = TOOLS_DOCUMENT.replace(
    "        description: No such customer.\n    risk: read_only",
    "        description: No such customer.\n"
    "    circuit_breaker: {failure_threshold: 2, window_s: 60, half_open_after_ms: 1, trial_calls: 1,"
    " ignore_codes: [RATE_LIMIT_EXCEEDED]}\n    risk: read_only",
    1,
)


@pytest.fixture(params=["database", "redis"] if HAS_REDIS else ["database"])
def kind(request, settings):
    if request.param == "database":
        settings.CELERY_BROKER_URL = ""  # no Redis configured: the database store
    store.cache_clear()
    yield request.param
    store.cache_clear()


@pytest.fixture
def tooling(db, kind):
    assert DOCUMENT != TOOLS_DOCUMENT
    config_import(text=DOCUMENT, source="test", actor=None, reason="ignore_codes tests")
    assert store().name == kind


def state() -> str:
    return breaker_state("verify_phone", breaker=BREAKER)


def failed(client, n: int, code: str, *, wait_while_open: bool = False):
    """A session of its own checks verify_phone and reports ``code``; the check's answer."""
    session_id = f"s{n}"
    made = client.post("/api/v1/sessions", {"machine": "tooling", "session_id": session_id}, format="json")
    assert made.status_code == 201, made.json()
    deadline = time.monotonic() + 10
    while True:  # an open breaker turns half-open a millisecond after it opened
        answer = check(client, session_id, "verify_phone", {"phone": PHONE}, operation_id=f"op-{n}")
        if answer.status_code != 503 or not wait_while_open or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    if answer.status_code == 201 and code:
        assert report(client, f"op-{n}", error={"code": code}).status_code == 200
    return answer


def open_it(client, first: int) -> None:
    for n in (first, first + 1):
        assert failed(client, n, "NOT_FOUND").status_code == 201
    assert state() in (OPEN, HALF_OPEN)  # half-open after a millisecond


def test_an_ignored_code_does_not_count_and_another_does(client):
    for n in range(5):
        assert failed(client, n, "RATE_LIMIT_EXCEEDED").status_code == 201
    assert state() == CLOSED
    assert store().snapshot("verify_phone", breaker=None).failures == 0
    assert failed(client, 5, "NOT_FOUND").status_code == 201
    assert state() == CLOSED
    assert failed(client, 6, "NOT_FOUND").status_code == 201
    assert state() in (OPEN, HALF_OPEN)


def test_a_trial_ended_by_an_ignored_code_gives_its_slot_back(client):
    """With its slot kept, the next call would wait for the first trial's deadline (``circuit_open``)."""
    open_it(client, 0)
    trial = failed(client, 2, "RATE_LIMIT_EXCEEDED", wait_while_open=True)
    assert trial.status_code == 201, trial.json()
    assert state() == HALF_OPEN
    again = failed(client, 3, "")
    assert again.status_code == 201, again.json()
    assert report(client, "op-3", output={"verified": True}).status_code == 200
    assert state() == CLOSED


def test_the_staff_list_shows_the_ignored_codes_as_the_spec_describes(client):
    response = staff("watcher", "agents.view_toolbreaker").get("/api/v1/tools/breakers")
    assert response.status_code == 200, response.content
    item = by_tool(response.json())["verify_phone"]
    assert item["circuit_breaker"]["ignore_codes"] == ["RATE_LIMIT_EXCEEDED"]
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    schema = {"$ref": "#/components/schemas/ToolBreaker", "components": spec["components"]}
    jsonschema.Draft202012Validator(schema).validate(item)

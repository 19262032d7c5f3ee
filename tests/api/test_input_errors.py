"""Input a client can send that used to end in a server error: a number no double holds, and a
configuration with a control character YAML does not allow. Each is a clear 4xx problem+json."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision
from tests.support import DEMO_TEXT, agent_api

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def send(client: APIClient, path: str, raw: str):
    return client.generic("POST", path, raw.encode(), content_type="application/json")


def assert_problem(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.content[:500]
    assert answer["Content-Type"] == PROBLEM
    body = answer.json()
    assert (body["status"], body["code"]) == (status, code), body
    return body


@pytest.fixture
def agent(demo) -> APIClient:
    client = agent_api()
    client.raise_request_exception = False  # a server error is what these tests look for, not a crash
    return client


@pytest.fixture
def staff(demo, staff_user) -> APIClient:
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=staff_user)}")
    return client


OUT_OF_RANGE = {
    "a context value": (
        "/api/v1/sessions",
        '{"machine": "after_sales", "session_id": "x1", "context": {"a": 1e400}}',
        {"context": {"a": None}},
    ),
    "a negative one in a list": (
        "/api/v1/sessions",
        '{"machine": "after_sales", "session_id": "x2", "context": {"b": [1, -1E+999]}}',
        {"context": {"b": {"1": None}}},
    ),
    "a fact": (
        "/api/v1/decisions",
        '{"point": "refund_approval", "facts": {"refund_amount": 1e400}}',
        {"facts": {"refund_amount": None}},
    ),
    "a confidence": (
        "/api/v1/decisions",
        '{"point": "intent_routing", "input": "hi", "candidate": {"decision": "general_query", "confidence": 1e309}}',
        {"candidate": {"confidence": None}},
    ),
    "an anomaly report's top level": ("/api/v1/sessions/s/anomalies", '{"code": "x", "n": 2e308}', {"n": None}),
}


def _leaves(errors, shape):
    """The messages at the leaves of ``shape`` (None marks a leaf) in ``errors``, which has no others."""
    assert isinstance(errors, dict) and set(errors) == set(shape), (errors, shape)
    found = []
    for key, sub in shape.items():
        found += errors[key] if sub is None else _leaves(errors[key], sub)
    return found


@pytest.mark.parametrize(("path", "raw", "shape"), list(OUT_OF_RANGE.values()), ids=list(OUT_OF_RANGE))
def test_a_number_out_of_range_is_a_field_error(agent, path, raw, shape):
    body = assert_problem(send(agent, path, raw), 422, "invalid_request")
    (message,) = _leaves(body["errors"], shape)
    assert "out of range" in message and "finite" in message


def test_a_number_out_of_range_in_a_staff_body_is_a_field_error(staff):
    raw = '{"config": "version: 1", "reason": "r", "impact_days": 1e400}'
    body = assert_problem(send(staff, "/api/v1/change-requests", raw), 422, "invalid_request")
    assert list(body["errors"]) == ["impact_days"]
    assert not ChangeRequest.objects.exists()


@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'])
def test_nan_and_infinity_are_still_not_json(agent, raw):
    """Not JSON at all (RFC 8259 has no such tokens): malformed, as documented, not unprocessable."""
    body = assert_problem(send(agent, "/api/v1/sessions", raw), 400, "malformed_json")
    assert "not allowed in JSON" in body["detail"]


def test_large_finite_numbers_and_tiny_ones_still_pass(agent):
    raw = '{"machine": "after_sales", "session_id": "x3", "context": {"big": 1.7e308, "tiny": 1e-400}}'
    created = send(agent, "/api/v1/sessions", raw)
    assert created.status_code == 201, created.content
    context = agent.get("/api/v1/sessions/x3").json()["context"]
    # PostgreSQL's jsonb keeps numbers as numeric and may write 1.7e308 back in full: the same number.
    assert (float(context["big"]), context["tiny"]) == (1.7e308, 0.0)


@pytest.mark.parametrize("char", ["\x10", "\x16", "\x07"], ids=["U+0010", "U+0016", "U+0007"])
def test_a_configuration_with_a_control_character_is_invalid_config(staff, char):
    config = DEMO_TEXT.replace("value: 0.65", f"value: 0.6{char}5", 1)
    line = DEMO_TEXT[: DEMO_TEXT.index("value: 0.65")].count("\n") + 1
    revisions = ConfigRevision.objects.count()
    answer = staff.post("/api/v1/change-requests", {"config": config, "reason": "typo"}, format="json")
    body = assert_problem(answer, 422, "invalid_config")
    (message,) = body["errors"]["config"]
    assert message.startswith(f"document: invalid YAML: the character U+{ord(char):04X} (column ")
    assert message.endswith(f"(line {line})")
    assert not ChangeRequest.objects.exists() and ConfigRevision.objects.count() == revisions


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/change-requests?state=",
        "/api/v1/change-requests?stat=pending",
        "/api/v1/reports/decision-map?days=",
        "/api/v1/reports/decision-map.csv?day=7",
        "/api/v1/queue?holder=",
        "/api/v1/queue?reason=",
        "/api/v1/queue?holder=mine&page=2",
        "/api/v1/change-requests/1?verbose=1",
    ],
)
def test_a_staff_query_parameter_that_is_empty_or_unknown_is_refused(staff, url):
    """Found by the staff API's fuzzing: these were ignored, so a misspelt or empty filter answered
    everything as if it had matched."""
    body = assert_problem(staff.get(url), 422, "invalid_request")
    (name,) = body["errors"]
    assert name in url


def test_the_staff_filters_still_filter(staff):
    assert staff.get("/api/v1/change-requests?state=pending").json() == {"change_requests": []}
    assert staff.get("/api/v1/queue?holder=mine&reason=rule").json() == {"queue": []}
    assert staff.get("/api/v1/reports/decision-map?days=7&point=intent_routing").status_code == 200

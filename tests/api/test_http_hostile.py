"""Hostile requests over real HTTP, against the threaded server Django runs for tests.

Bodies of any size over the limit, chunked bodies, URLs no endpoint has (with DEBUG on and off) and
pathological raw model output: each gets problem+json with its stable code, never Django's HTML and
never a server error. Sent with ``http.client``, so that the framing is exactly what is written here.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly
from agents.sessions.services import session_create
from rules.models import DecisionRecord


def send(
    live_server,
    method: str,
    path: str,
    *,
    body: bytes | Iterable[bytes] | None = None,
    headers: dict[str, str] | None = None,
    chunked: bool = False,
) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        # A server that refuses a body from its headers may answer and close before the client has sent
        # all of it: the answer is already on the socket, and it is what is tested.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def problem(answer: tuple[int, dict[str, str], bytes], status: int, code: str) -> dict[str, Any]:
    got, headers, raw = answer
    assert got == status, raw[:300]
    assert headers["content-type"] == "application/problem+json", raw[:300]
    body = json.loads(raw)
    assert (body["status"], body["code"]) == (status, code), body
    return body


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


# --- Body size ----------------------------------------------------------------------------------------

LIMIT = settings.ARBITER_MAX_REQUEST_BYTES


@pytest.mark.parametrize(
    "size",
    [
        LIMIT + 1,
        2_621_441,  # one byte over Django's DATA_UPLOAD_MAX_MEMORY_SIZE: Django's HTML 400 before
        10 * 1024 * 1024,
    ],
    ids=["limit+1", "over Django's 2.5 MB", "10 MB"],
)
def test_every_body_over_the_limit_is_413_problem_json_whatever_its_size(live_demo, live_token, size):
    prefix = b'{"point": "intent_routing", "input": "'
    body = prefix + b"x" * (size - len(prefix) - 2) + b'"}'
    assert len(body) == size
    refused = problem(
        send(live_demo, "POST", "/api/v1/decisions", body=body, headers=auth(live_token)), 413, "payload_too_large"
    )
    assert refused["detail"] == f"The request body is larger than {LIMIT // 1024} KiB."
    # Refused at the door: before authentication, and on every route under /api/.
    problem(send(live_demo, "POST", "/api/v1/sessions", body=body, headers={}), 413, "payload_too_large")
    assert not DecisionRecord.objects.exists()


def test_a_body_at_the_limit_is_read(live_demo, live_token):
    body = b'{"point": "intent_routing", "input": "\xe6\x88\x91\xe8\xa6\x81\xe6\x8a\x95\xe8\xaf\x89"}'
    body += b" " * (LIMIT - len(body))  # JSON whitespace
    status, _, raw = send(live_demo, "POST", "/api/v1/decisions", body=body, headers=auth(live_token))
    assert status == 201, raw[:300]


# --- Chunked bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/decisions", "/api/v1/sessions"])
def test_a_chunked_body_is_refused_with_411_not_read_as_empty(live_demo, live_token, path):
    chunks = [b'{"point": "refund_approval", ', b'"facts": {"refund_amount": 800}}']
    refused = problem(
        send(live_demo, "POST", path, body=iter(chunks), headers=auth(live_token), chunked=True), 411, "length_required"
    )
    assert "Content-Length" in refused["detail"]
    assert not DecisionRecord.objects.exists()
    # The server keeps answering on new connections.
    status, _, _ = send(live_demo, "GET", "/api/v1/points", headers=auth(live_token))
    assert status == 200


def test_a_body_framed_two_ways_is_refused(live_demo, live_token):
    body = b'{"point": "refund_approval"}'
    headers = {**auth(live_token), "Content-Length": str(len(body)), "Transfer-Encoding": "gzip"}
    problem(send(live_demo, "POST", "/api/v1/decisions", body=body, headers=headers), 411, "length_required")


# --- URLs no endpoint has -----------------------------------------------------------------------------

UNKNOWN = [
    ("GET", "/api/"),
    ("GET", "/api/v1"),
    ("GET", "/api/v1/"),
    ("GET", "/api/v2/points"),
    ("GET", "/api/v1/nope"),
    ("GET", "/api/v1/points/"),
    ("GET", "/api/v1/points/intent_routing/"),
    ("POST", "/api/v1/decisions/"),
    ("GET", "/api/v1/decisions/00000000-0000-0000-0000-000000000000/replay/"),
    ("POST", "/api/v1/sessions/s1/transitions/"),
    ("DELETE", "/api/v1/sessions/s1/"),
    ("GET", "/api/v1/openapi.yaml/"),
    ("PUT", "/api/v1/anything/at/all"),
]


@pytest.mark.parametrize("debug", [False, True], ids=["DEBUG off", "DEBUG on"])
@pytest.mark.parametrize(("method", "path"), UNKNOWN)
def test_an_unknown_api_url_is_404_problem_json_in_every_setting(live_demo, live_token, settings, debug, method, path):
    settings.DEBUG = debug
    body = b"{}" if method in ("POST", "PUT") else None
    answer = problem(send(live_demo, method, path, body=body, headers=auth(live_token)), 404, "not_found")
    assert answer["detail"] == "No such API endpoint."
    # Without a token too: nothing is there to authenticate for.
    problem(send(live_demo, method, path, body=body), 404, "not_found")


@pytest.mark.parametrize("debug", [False, True], ids=["DEBUG off", "DEBUG on"])
def test_other_urls_keep_django_s_pages(live_demo, settings, debug):
    settings.DEBUG = debug
    status, headers, _ = send(live_demo, "GET", "/no-such-page")
    assert status == 404 and headers["content-type"].startswith("text/html")


# --- Pathological raw model output --------------------------------------------------------------------

PATHOLOGICAL_RAW = {
    "nested past the decoder's recursion limit": '{"decision": "general_query", "confidence": 0.9, "reason": '
    + "[" * 9_000
    + "]" * 9_000
    + "}",
    "unclosed nesting": '{"a":' * 3_900,
    "integer of 5,000 digits": '{"decision": "general_query", "confidence": 1' + "0" * 5_000 + "}",
    "a brace on every character": "{" * 20_000,
    "infinite confidence": '{"decision": "general_query", "confidence": 1e999}',
    "NaN confidence": '{"decision": "general_query", "confidence": NaN}',
}


@pytest.mark.parametrize("raw", list(PATHOLOGICAL_RAW.values()), ids=list(PATHOLOGICAL_RAW))
def test_pathological_raw_output_is_invalid_model_output_not_a_server_error(live_demo, live_token, raw):
    session_create(agent=AgentRuntime.objects.get(name="api_bot"), machine_key="after_sales", session_id="s1")
    body = {"point": "intent_routing", "session_id": "s1", "input": "有几种颜色", "candidate_raw": raw}
    status, _, answer = send(
        live_demo, "POST", "/api/v1/decisions", body=json.dumps(body).encode(), headers=auth(live_token)
    )
    assert status == 201, answer[:300]
    made = json.loads(answer)
    # The default answers, as for any output that holds no candidate, and the failure is recorded.
    assert (made["ruled_by"], made["candidate"]) == ("default", None), made
    record = DecisionRecord.objects.get(pk=made["id"])
    assert record.candidate_invalid and record.candidate_raw == raw
    anomaly = Anomaly.objects.get(decision_id=record.pk)
    assert (anomaly.code, anomaly.session_id) == ("invalid_candidate_output", "s1")

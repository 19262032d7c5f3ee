"""A configuration for the tool-call API's tests: one machine whose first state names a tool for each
on_exhausted kind, and helpers to check, report and wait through the DRF test client."""

from __future__ import annotations

import time
from typing import Any

from rest_framework.test import APIClient

TOOLS_DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: tooling
    states: [start, checking, asking, confirmed, human_handoff, done]
    initial: start
    handoff: human_handoff
    terminal: [done]
    max_anomalies: 50
    transitions:
      start: [checking, asking, human_handoff, done]
      checking: [confirmed, asking, human_handoff]
      asking: [checking, human_handoff]
      confirmed: [done]
      human_handoff: [done]
    actions:
      start: [verify_phone, flaky, slow_retry, to_event, to_state, to_nowhere, no_contract, transfer_to_human]
      checking: [verify_phone, slow_retry]
    events:
      - name: ask_customer
        from: [start]
        to: asking
tools:
  - name: verify_phone
    input_schema:
      type: object
      properties:
        phone: {type: string, pattern: "^1[3-9][0-9]{9}$"}
      required: [phone]
      additionalProperties: false
    output_schema:
      type: object
      properties:
        verified: {type: boolean}
      required: [verified]
    error_codes:
      - code: RATE_LIMIT_EXCEEDED
        retryable: true
        max_retries: 2
        backoff: {kind: fixed, base_ms: 20, cap_ms: 20}
      - code: NOT_FOUND
        description: No such customer.
    risk: read_only
  - name: flaky
    input_schema: {type: object}
    error_codes:
      - code: UPSTREAM_TIMEOUT
        retryable: true
        max_retries: 1
        backoff: {kind: fixed, base_ms: 20, cap_ms: 20}
    risk: read_only
  - name: slow_retry
    input_schema: {type: object}
    error_codes:
      - code: RATE_LIMIT_EXCEEDED
        retryable: true
        max_retries: 3
        backoff: {kind: fixed, base_ms: 600000, cap_ms: 600000}
    risk: read_only
  - name: to_event
    input_schema: {type: object}
    on_exhausted: {event: ask_customer}
    risk: read_only
  - name: to_state
    input_schema: {type: object}
    on_exhausted: {state: asking}
    risk: read_only
  - name: to_nowhere
    input_schema: {type: object}
    on_exhausted: {state: confirmed}
    risk: read_only
"""

PHONE = "13800138000"


def check(client: APIClient, session_id: str, tool: str, input: Any, *, expected: str = "start", **extra: Any) -> Any:
    body = {"tool": tool, "input": input, "expected_state": expected, **extra}
    return client.post(f"/api/v1/sessions/{session_id}/tool-calls", body, format="json")


def report(client: APIClient, operation_id: str, *, duration_ms: int = 12, **result: Any) -> Any:
    body = {**result, "duration_ms": duration_ms}
    return client.post(f"/api/v1/tool-calls/{operation_id}/result", body, format="json")


def check_when_due(client: APIClient, session_id: str, tool: str, input: Any, operation_id: str, **extra: Any) -> Any:
    """Check again until the retry is due (``retry_in_progress`` before it): polls, no fixed sleep."""
    deadline = time.monotonic() + 10
    while True:
        answer = check(client, session_id, tool, input, operation_id=operation_id, **extra)
        if answer.status_code != 409 or answer.json()["code"] != "retry_in_progress":
            return answer
        assert time.monotonic() < deadline, answer.json()
        time.sleep(min(answer.json()["retry_after_ms"], 50) / 1000)


def move(client: APIClient, session_id: str, to: str, expected: str) -> None:
    answer = client.post(
        f"/api/v1/sessions/{session_id}/transitions", {"to": to, "expected_state": expected}, format="json"
    )
    assert answer.status_code == 200, answer.json()

"""Tool contracts the tests share: the demo's verify_phone / query_order / update_order contracts, as a
``tools:`` section (demo/after_sales.yaml ends with the same one, so the demo text already has it)."""

from __future__ import annotations

import re

from rules.config.document.validate import config_check
from tests.support import DEMO_TEXT

PHONE = {"type": "string", "pattern": "^1[3-9][0-9]{9}$"}

TOOLS_YAML = """\
tools:
  - name: verify_phone
    description: Checks that a phone number belongs to the customer.
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
        max_retries: 3
        backoff: {kind: exponential, base_ms: 200, cap_ms: 2000, jitter: 0.2}
    timeout_ms: 3000
    risk: read_only
  - name: query_order
    description: Reads an order.
    input_schema:
      type: object
      properties:
        order_id: {type: string, pattern: "^[A-Z]{2}[0-9]{8}$"}
      required: [order_id]
    error_codes:
      - code: ORDER_NOT_FOUND
        description: No such order; ask the customer again.
      - code: RATE_LIMIT_EXCEEDED
        retryable: true
        max_retries: 5
        backoff: {kind: exponential, base_ms: 100, cap_ms: 3000, jitter: 0.5}
    max_concurrent: 20
    circuit_breaker: {failure_threshold: 5, window_s: 30, half_open_after_ms: 10000, trial_calls: 2}
    risk: read_only
  - name: update_order
    description: Changes an order's receiver phone or address.
    input_schema:
      type: object
      properties:
        order_id: {type: string, pattern: "^[A-Z]{2}[0-9]{8}$"}
        receiver_phone: {type: string, pattern: "^1[3-9][0-9]{9}$"}
        address: {type: string, minLength: 5, maxLength: 200}
      required: [order_id]
      additionalProperties: false
    error_codes:
      - code: ORDER_LOCKED
        description: The order has shipped; it cannot change.
      - code: UPSTREAM_TIMEOUT
        retryable: true
        max_retries: 2
        backoff: {kind: fixed, base_ms: 500, cap_ms: 500}
    on_exhausted: {state: human_handoff}
    timeout_ms: 5000
    max_concurrent: 5
    circuit_breaker: {failure_threshold: 3, window_s: 60, half_open_after_ms: 30000, trial_calls: 1}
    risk: write
    needs_approval_in: [received]
"""

# The demo as it was before it had contracts: for what a configuration without any does.
DEMO_WITHOUT_TOOLS = (
    DEMO_TEXT.split("\n# The after-sales tools the machines' actions name", 1)[0].split("\ntools:\n", 1)[0] + "\n"
)


# Where the demo's MCP part begins: its orders.* contracts, then its mcp_servers section, both last.
_MCP_PART = "\n  # The same three tools served by the `orders` MCP server"


def _without_mcp(text: str) -> str:
    """The demo without its MCP part (the ``orders.*`` contracts, the ``orders`` server, the actions naming
    them): the plain contracts alone and ``tools:`` last, as the tests built on it expect — in the demo's
    own text (tests replace pieces of it), not a YAML dump of it."""
    plain = re.sub(r",\s*orders\.\w+", "", text.split(_MCP_PART, 1)[0])
    return plain.rstrip("\n") + "\n"


DEMO_WITH_TOOLS = _without_mcp(DEMO_TEXT) if "\ntools:\n" in DEMO_TEXT else DEMO_TEXT.rstrip("\n") + "\n\n" + TOOLS_YAML


# A small document with one tool contract, for the YAML checker's tests.
# Line numbers matter below.
DOC = """\
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: orders
    states: [collecting, executing, done, handoff]
    initial: collecting
    handoff: handoff
    terminal: [done]
    transitions:
      collecting: [executing, handoff]
      executing: [done, collecting, handoff]
    actions:
      executing: [update_order]
    events:
      - name: clarification_required
        from: [executing]
        to: collecting
tools:
  - name: update_order
    input_schema:
      type: object
      properties:
        receiver_phone: {type: string, pattern: "^1[3-9][0-9]{9}$"}
      required: [receiver_phone]
    error_codes:
      - code: UPSTREAM_TIMEOUT
        retryable: true
        backoff: {kind: exponential, base_ms: 100, cap_ms: 1000}
      - code: ORDER_LOCKED
    on_exhausted: {event: clarification_required}
    risk: write
    needs_approval_in: [executing]
"""


def problems_of(text: str) -> list[str]:
    document, problems = config_check(text)
    assert document is None
    return problems

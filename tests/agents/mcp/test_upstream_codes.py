"""How an upstream's ``isError`` result becomes the contract code its policy judges (no server needed)."""

from __future__ import annotations

import mcp_types as types

from agents.mcp.upstreams import TOOL_ERROR, error_code

DECLARED = {"ORDER_LOCKED": {}, "RATE_LIMIT_EXCEEDED": {"retryable": True}}


def failed(text: str, structured: object = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=True
    )


def test_the_code_in_structured_content_wins():
    assert error_code(failed("whatever", {"code": "RATE_LIMIT_EXCEEDED"}), DECLARED) == "RATE_LIMIT_EXCEEDED"
    # An undeclared code is passed on as it is: the policy records it as an anomaly and does not retry.
    assert error_code(failed("", {"code": "SOMETHING_NEW"}), DECLARED) == "SOMETHING_NEW"


def test_a_declared_code_at_the_start_of_the_text():
    assert error_code(failed("ORDER_LOCKED: the order has shipped"), DECLARED) == "ORDER_LOCKED"
    assert error_code(failed("  RATE_LIMIT_EXCEEDED"), DECLARED) == "RATE_LIMIT_EXCEEDED"


def test_anything_else_is_a_tool_error():
    assert error_code(failed("Something went wrong"), DECLARED) == TOOL_ERROR
    assert error_code(failed("", {"code": "has spaces in it"}), DECLARED) == TOOL_ERROR
    assert error_code(failed("", {"code": 42}), DECLARED) == TOOL_ERROR

"""The reference agent's MCP mode end to end: a live Arbiter (its gateway at ``/mcp``) holding the demo with
the agent's additions, its ``orders`` server pointed at the demo's MCP order server running in a process of
its own. The agent's tool side speaks only MCP (the SDK's ``ClientSession`` over streamable HTTP, the agent
token, the ``Arbiter-Session`` header); its decides stay on REST. The seed's tool conversations come out as
they do over REST: a rate-limited query retried by the gateway (three runs upstream, one MCP call), an
order that does not exist given up and handed to a person, a phone the schema refuses never reaching the
upstream — and not one REST tool-call request is made."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agents.management.commands.demo_setup import demo_text_with_orders_url
from agents.sessions.models import Session
from agents.tools.models import ToolCall
from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
from examples.after_sales_agent.conversations import HERE
from examples.after_sales_agent.mcp_tools import McpToolSide
from examples.after_sales_agent.run import conversation_run
from tests.support import DEMO_TEXT
from tests.support.mcp_upstream import McpUpstream, mcp_upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


@pytest.fixture
def live_config(upstream: McpUpstream) -> str:
    upstream.reset()
    return agent_config_text(demo_text_with_orders_url(DEMO_TEXT, upstream.url))


@pytest.fixture
def bot(live):
    return live.agent(points=AGENT_POINTS)


@pytest.fixture
def rest_paths(bot) -> list[str]:
    """The paths of every REST request the agent's client makes."""
    seen: list[str] = []

    def hook(response: httpx.Response) -> None:
        seen.append(response.request.url.path)

    bot.http.event_hooks["response"].append(hook)
    return seen


@pytest.fixture
def mcp(bot) -> Iterator[McpToolSide]:
    with McpToolSide.for_agent(bot) as side:
        yield side


def test_the_tool_conversations_come_out_as_over_rest(bot, mcp, upstream, rest_paths) -> None:
    for name in ("tool_query_order", "tool_rate_limited", "tool_invalid_phone"):
        outcome = conversation_run(bot, HERE / f"{name}.yaml", out=None, mcp=mcp, upstream=upstream)
        assert outcome.mismatches == [], name
        assert all(t.arbiter_calls == 1 for t in outcome.tools), name  # one tools/call each, retries inside

    assert not [p for p in rest_paths if "tool-calls" in p]  # the tool side spoke only MCP
    counts = upstream.calls()["counts"]
    # verify_phone: once in tool_query_order, once in tool_invalid_phone (the refused inputs never reached
    # it); query_order: once, then three times (two rate limits retried), then the order it lacks.
    assert counts == {"verify_phone": 2, "query_order": 5}


def test_a_rate_limited_query_is_one_operation_of_three_attempts(bot, mcp, upstream) -> None:
    outcome = conversation_run(bot, HERE / "tool_rate_limited.yaml", out=None, mcp=mcp, upstream=upstream)

    assert outcome.mismatches == []
    calls = ToolCall.objects.filter(session__key=outcome.session_id).order_by("created_at")
    assert [(c.tool, c.attempt, c.status) for c in calls] == [
        ("orders.query_order", 3, "done"),
        ("orders.query_order", 1, "gave_up"),
    ]
    assert Session.objects.get(key=outcome.session_id).state == "human_handoff"


def test_the_tools_listed_follow_the_session_s_state(bot, mcp) -> None:
    session = bot.session(machine="after_sales", session_id="mcp-listing")
    in_init = {t.name for t in mcp.tools(session)}
    session.move("received", reason="the customer's request is understood")
    in_received = {t.name for t in mcp.tools(session)}

    assert {"orders.verify_phone", "orders.query_order"} <= in_init
    assert "orders.update_order" not in in_init  # allowed in received only
    assert "orders.update_order" in in_received

"""The reference agent's parts that are not the agent: what a turn and a tool call came to, the model's
extracted parameters, and a log of the Arbiter calls a client makes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from arbiter_client import Arbiter


def model_params(output: str) -> dict[str, str]:
    """The parameters the model extracted (``{"decision": …, "params": {…}}``), when its output is one
    JSON object; anything else extracts nothing (the decision is read by ``parse_candidate``)."""
    try:
        data = json.loads(output)
    except ValueError:
        return {}
    params = data.get("params") if isinstance(data, dict) else None
    return {k: v for k, v in params.items() if isinstance(v, str) and v} if isinstance(params, dict) else {}


class CallLog:
    """The Arbiter calls a client makes (``POST /api/v1/decisions 201``), from httpx's response hook."""

    def __init__(self, arbiter: Arbiter):
        self.calls: list[str] = []
        self._http = arbiter.http
        self._http.event_hooks["response"].append(self._seen)

    def _seen(self, response: httpx.Response) -> None:
        self.calls.append(f"{response.request.method} {response.request.url.path} {response.status_code}")

    def close(self) -> None:
        self._http.event_hooks["response"].remove(self._seen)


@dataclass
class Turn:
    message: str
    point: str
    decision: str | None
    decided_by: str
    state: str
    reply: str | None  # None: a person has the conversation, the bot says nothing
    arbiter_calls: int
    model_calls: int
    candidate: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    asked_for: str | None = None
    handed_off: bool = False
    refused: list[str] = field(default_factory=list)  # fields the server refused this turn (invalid_fields)
    normalised: dict[str, list[str]] = field(default_factory=dict)  # field → normalisers that changed it
    missing: list[str] = field(default_factory=list)  # what the tool's state still lacks after the turn
    fields: dict[str, Any] = field(default_factory=dict)  # the values this turn stored, as the server keeps them


TOOL_REPLIES = {
    "done": "已为您查询/处理完毕。",
    "invalid_tool_input": "这个信息格式好像不对，请再核对一下（例如 11 位手机号、订单号）。",
    "circuit_open": "订单系统暂时不可用，请稍后再试。",
    "gave_up": "暂时没能处理成功，已为您转接人工客服，请稍候。",
    "refused": "这个操作现在无法办理。",
}


@dataclass
class ToolTurn:
    """One tool call the model asked for, run through ``session.call_tool``: what came of it."""

    tool: str
    input: dict[str, Any]
    outcome: str = ""  # done, invalid_tool_input, circuit_open, gave_up, or the refusal's code
    output: Any = None
    code: str | None = None  # the last failure reported (gave_up) or the refusal's code
    errors: list[str] = field(default_factory=list)  # JSON pointers of an input the schema refused
    tool_runs: int = 0  # times the tool function itself ran: the load the upstream saw
    state: str = ""
    handed_off: bool = False
    arbiter_calls: int = 0
    reply: str | None = None

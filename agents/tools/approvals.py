"""A person's approval of a tool call in a state its contract names in ``needs_approval_in``.

INTERFACE (the tool-call check calls ``call_await_approval``; the queue page and staff API call
``approval_decide``):

- ``call_await_approval(session, call, *, agent) -> None`` — the caller holds the session's lock and has
  saved ``call`` with status ``awaiting_approval``: the session goes to its machine's handoff state
  (kind ``approval``, reason ``approval``) so it shows in the human queue with the proposed call.
- ``approval_decide(*, call_pk, user, approve, note) -> ToolCall`` — approve (status ``approved``) or reject
  (``rejected``); the session goes back to the state the call was asked in; a queue event records it.

STUB until built: no call waits.
"""

from __future__ import annotations

from typing import Any

from agents.sessions.models import Session
from agents.tools.models import ToolCall


def call_await_approval(session: Session, call: ToolCall, *, agent: Any) -> None:
    raise NotImplementedError("approvals are not built yet")


def approval_decide(*, call_pk: int, user: Any, approve: bool, note: str) -> ToolCall:
    raise NotImplementedError("approvals are not built yet")

"""``AsyncSession``: the session helper for ``AsyncArbiter``, with the same tracking (``SessionState``)
and the same behaviour as ``Session`` (see arbiter_client.session for what is read from where)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from arbiter_client import tools
from arbiter_client.errors import SessionRefused, StateMismatch
from arbiter_client.session import SessionState
from arbiter_client.trace import llm_call_event
from arbiter_client.types import (
    ActionAllowed,
    AnomalyRecorded,
    Decision,
    EventMove,
    FieldsUpdated,
    Move,
    NeedsCandidate,
    SessionDetail,
    TraceRecorded,
)

if TYPE_CHECKING:
    from arbiter_client.client import AsyncArbiter


class AsyncSession(SessionState):
    def __init__(self, arbiter: AsyncArbiter, answer: Mapping[str, Any]):
        self.arbiter = arbiter
        super().__init__(answer)

    async def decide(
        self,
        point: str,
        *,
        input: str | None = None,
        candidate: Mapping[str, Any] | None = None,
        candidate_raw: str | None = None,
        facts: Mapping[str, Any] | None = None,
        tokens: Mapping[str, Any] | None = None,
        llm: Mapping[str, Any] | None = None,
        apply: bool = True,
        expected_state: str | None = None,
        idempotency_key: str | None = None,
    ) -> Decision | NeedsCandidate:
        request = self._decide_request(input, candidate, candidate_raw, facts, tokens, llm)
        self._last_decide = {"point": point, **request}
        sent = self._expected_state(apply, expected_state)
        try:
            answer = await self.arbiter.decide(
                point,
                session_id=self.session_id,
                apply=apply or None,
                expected_state=sent,
                idempotency_key=idempotency_key,
                **request,
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def state_map(self, point: str, revision: int) -> dict[str, str] | None:
        key = (point, revision)
        if key not in self._state_maps:
            served = (await self.arbiter.point(point)).get("state_map")
            self._state_maps[key] = dict(served) if isinstance(served, Mapping) else None
        return self._state_maps[key]

    async def follow(
        self, decision: Decision | NeedsCandidate, *, state_map: Mapping[str, str] | None = None
    ) -> Move | None:
        session = decision.get("session")
        if session is not None:
            self.absorb(decision)
            if "from" in session:  # decided with apply: the session has moved (or stayed) already
                return None
        if decision["needs_candidate"] or decision["decision"] is None:
            raise ValueError("this answer needs a candidate: decide again with the model's candidate first")
        mapping = state_map
        if mapping is None:
            mapping = await self.state_map(decision["point"], decision["revision"])
        if mapping is None:
            raise ValueError("the server serves no state_map for this point yet: pass state_map=")
        target = self._target(decision, mapping)
        if target is None:
            return None
        try:
            return await self.move(target, decision_id=decision["id"])
        except StateMismatch:
            if self._last_decide is None:
                raise
            again = dict(self._last_decide)
            fresh = await self.decide(again.pop("point"), apply=False, **again)
            target = self._target(fresh, mapping)
            return None if target is None else await self.move(target, decision_id=fresh["id"])

    async def move(
        self,
        to: str,
        *,
        reason: str | None = None,
        decision_id: str | None = None,
        updates: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Move:
        """Move to ``to`` from the state this session is in; ``updates`` set fields with the move."""
        try:
            answer = await self.arbiter.session_move(
                self.session_id,
                to,
                expected_state=self.state,
                reason=reason,
                decision_id=decision_id,
                updates=updates,
                idempotency_key=idempotency_key,
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def update_fields(self, updates: dict[str, Any], *, idempotency_key: str | None = None) -> FieldsUpdated:
        """Set (``None`` clears) fields of this session in the state it is in, all or nothing; a refusal
        (``InvalidFields``, ``FieldsMissing``, ``StateMismatch``, …) is raised after the state it carries is taken."""
        try:
            answer = await self.arbiter.session_fields_update(
                self.session_id, updates, expected_state=self.state, idempotency_key=idempotency_key
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def event(
        self,
        name: str,
        *,
        updates: dict[str, Any] | None = None,
        decision_id: str | None = None,
        proposed_by: str | None = None,
        idempotency_key: str | None = None,
    ) -> EventMove:
        """Send the machine's event ``name`` from the state this session is in (``updates`` set fields with
        its move, all or nothing); a refusal
        (``EventNotAllowed``, ``GuardFailed``, ``StateMismatch``, …) is raised after the state it carries is taken."""
        try:
            answer = await self.arbiter.session_event(
                self.session_id,
                name,
                expected_state=self.state,
                updates=updates,
                decision_id=decision_id,
                proposed_by=proposed_by,
                idempotency_key=idempotency_key,
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def check_action(self, type: str, params: Mapping[str, Any] | None = None) -> ActionAllowed:
        try:
            answer = await self.arbiter.session_action(
                self.session_id, type, dict(params) if params is not None else None
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.allowed_actions = list(answer["allowed_actions"])
        self.absorb(answer)
        return answer

    async def call_tool(
        self,
        name: str,
        input: Mapping[str, Any],
        fn: Callable[[Any], Awaitable[Any]],
        *,
        operation_id: str | None = None,
        max_wait_s: float = 60.0,
        wait_for_breaker: bool = False,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> Any:
        """As ``Session.call_tool``, with an async ``fn`` (its timeout by ``asyncio.wait_for``)."""
        return await tools.drive_async(
            self,
            name,
            input,
            fn,
            operation_id=operation_id,
            max_wait_s=max_wait_s,
            wait_for_breaker=wait_for_breaker,
            sleep=sleep,
        )

    async def report_anomaly(self, code: str, *, detail: str | None = None, raw: str | None = None) -> AnomalyRecorded:
        answer = await self.arbiter.session_anomaly(self.session_id, code, detail=detail, raw=raw)
        self.absorb(answer)
        return answer

    async def trace(self, events: list[dict[str, Any]], *, turn_id: str | None = None) -> TraceRecorded:
        """Report the runtime's own events of a turn (``arbiter_client.trace`` builds them) in one request:
        sampling keeps or drops a turn whole, and keeps every turn with an error."""
        return await self.arbiter.session_trace(self.session_id, events, turn_id=turn_id)

    async def trace_llm_call(self, *, model: str, turn_id: str | None = None, **details: Any) -> TraceRecorded:
        """Report one model call: ``model`` (``gen_ai.request.model``) and any of ``prompt_version``,
        ``input_tokens``, ``output_tokens``, ``latency_ms``, ``status``, ``point``, ``provider``,
        ``operation``, ``response_model``, ``error_type``, ``input_messages``, ``output_messages``,
        ``event_id`` (``arbiter_client.trace.llm_call_event``)."""
        return await self.trace([llm_call_event(model=model, **details)], turn_id=turn_id)

    async def interrupt(self, to: str, *, reason: str | None = None) -> Move:
        try:
            answer = await self.arbiter.session_interrupt(self.session_id, to, expected_state=self.state, reason=reason)
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def resume(self, *, reason: str | None = None) -> Move:
        try:
            answer = await self.arbiter.session_resume(self.session_id, expected_state=self.state, reason=reason)
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    async def refresh(self) -> SessionDetail:
        answer = await self.arbiter.session_get(self.session_id)
        self.absorb(answer)
        return answer

    async def timeline(self, *, after: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        cursor = after if after is not None else self.timeline_cursor
        entries: list[dict[str, Any]] = []
        while True:
            page = await self.arbiter.session_timeline(self.session_id, after=cursor, limit=limit)
            found, more = self._timeline_page(page, cursor)
            entries.extend(found)
            if not more:
                return entries
            cursor = self.timeline_cursor

    async def changes(self, *, after: int | None = None, wait: int = 0) -> list[dict[str, Any]]:
        cursor = after if after is not None else self.timeline_cursor
        return self._changes_answer(await self.arbiter.session_changes(self.session_id, after=cursor, wait=wait))

"""A conversation under a state machine, tracking ``state`` and ``seq`` from every answer.

The helper sends the state it believes the session is in (``expected_state``) with every move, and with
every decide that applies its outcome, and reads the session's new position from whatever comes back,
so a runtime never needs a read just to know where it is:
- a session's own answers (create, read, anomaly) carry ``state``, ``seq``, ``allowed_transitions`` …;
- a move answers ``{from, state, seq}``; a decide with ``apply`` carries the same in ``session``;
- a refusal about the session (``StateMismatch``, ``IllegalTransition`` …) carries ``state`` and ``seq``.
Where an answer or a refusal's problem carries a ``session`` object (issue 23's complete answers:
``{session_id, machine, state, seq, allowed_transitions, allowed_actions, allowed_events, handed_off,
handoff_reason, claimed_by, feedback, …}``) its members win over the answer's own, so the richer answers need no new
client. ``follow`` moves through the point's outcome → state map: the one the caller gives, or the
``state_map`` the point's answer serves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from arbiter_client import tools
from arbiter_client.errors import SessionRefused, StateMismatch
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
    from arbiter_client.client import Arbiter

_TRACKED = (
    "machine",
    "state",
    "seq",
    "allowed_transitions",
    "allowed_actions",
    "allowed_events",
    "handed_off",
    "handoff_reason",
    "claimed_by",
    "feedback",
)


class SessionState:
    """One session as this runtime last saw it, kept up to date from answers (shared by ``Session`` and
    ``AsyncSession``). Not thread-safe: one conversation, one worker at a time (two workers on one
    session are kept apart by the server's ``expected_state`` check)."""

    def __init__(self, answer: Mapping[str, Any]):
        self.session_id: str = answer["session_id"]
        self.machine: str | None = answer.get("machine")
        self.state: str = answer["state"]
        self.seq: int = answer["seq"]
        self.allowed_transitions: list[str] | None = None
        self.allowed_actions: list[str] | None = None
        self.allowed_events: list[str] | None = None  # the machine's events sendable now (servers since #24)
        self.handed_off = False
        self.handoff_reason: str | None = None
        self.claimed_by: str | None = None
        self.feedback: list[str] = []
        self._last_decide: dict[str, Any] | None = None
        self._state_maps: dict[tuple[str, int], dict[str, str] | None] = {}
        # Where the next ``timeline()`` or ``changes()`` starts: the last sequence id read.
        self.timeline_cursor: int | None = None
        self.absorb(answer)

    def __repr__(self) -> str:
        return f"<Session {self.session_id} {self.state} seq={self.seq}>"

    def absorb(self, answer: Mapping[str, Any]) -> None:
        """Take the session's position from an answer or a refusal's problem document: its ``session``
        object's members when it has one, else the answer's own (today's answers)."""
        seen = {k: answer[k] for k in _TRACKED if k in answer}
        session = answer.get("session")
        if isinstance(session, Mapping):
            seen.update({k: session[k] for k in _TRACKED if k in session})
        if isinstance(seen.get("seq"), int) and seen["seq"] < self.seq:
            return  # an answer older than what we know (a replayed idempotent move)
        if "state" in seen and seen["state"] != self.state:
            # Moved: what was allowed in the old state says nothing about the new one.
            self.allowed_transitions = self.allowed_actions = self.allowed_events = None
        feedback = seen.pop("feedback", None)
        if isinstance(feedback, list):
            self.feedback = feedback
        for key, value in seen.items():
            setattr(self, key, value)
        if self.handoff_reason and not self.handed_off:
            self.handed_off = True

    def _expected_state(self, apply: bool, given: str | None) -> str | None:
        """What a decide sends as ``expected_state``: the caller's, else with ``apply`` the state this
        helper believes the session is in (so a decide from a stale position is refused, not applied)."""
        if given is not None or not apply:
            return given
        return self.state

    def _timeline_page(self, page: Mapping[str, Any], sent: int | None) -> tuple[list[dict[str, Any]], bool]:
        """One page's events, and whether another page follows (``has_more``, with a ``next`` that moved on).
        The last ``next`` is kept even on the last page: the next call asks only for what happened since."""
        entries = [dict(e) for e in page.get("events") or []]
        following = page.get("next")
        moved_on = isinstance(following, int) and following != sent
        if isinstance(following, int):
            self.timeline_cursor = following
        return entries, bool(page.get("has_more")) and moved_on

    def _changes_answer(self, answer: Mapping[str, Any]) -> list[dict[str, Any]]:
        """A changes answer's events; its ``next`` kept, the session's position and handoff taken."""
        self.absorb(answer)
        return self._timeline_page(answer, None)[0]

    def _refused(self, error: SessionRefused) -> None:
        self.absorb(error.problem)
        session = error.problem.get("session")
        if isinstance(session, Mapping) and isinstance(session.get("allowed_actions"), list):
            return  # taken by absorb
        if isinstance(error.problem.get("allowed_actions"), list):
            self.allowed_actions = list(error.problem["allowed_actions"])

    @staticmethod
    def _decide_request(
        input: str | None,
        candidate: Mapping[str, Any] | None,
        candidate_raw: str | None,
        facts: Mapping[str, Any] | None,
        tokens: Mapping[str, Any] | None,
        llm: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "input": input,
            "candidate": dict(candidate) if candidate is not None else None,
            "candidate_raw": candidate_raw,
            "facts": dict(facts) if facts is not None else None,
            "tokens": dict(tokens) if tokens is not None else None,
            "llm": dict(llm) if llm is not None else None,
        }

    def _target(self, decision: Decision | NeedsCandidate, mapping: Mapping[str, str]) -> str | None:
        """Where the decision's outcome maps to, or None for nowhere (unmapped, or here already)."""
        if decision["needs_candidate"] or decision["decision"] is None:
            return None
        target = mapping.get(decision["decision"])
        return None if target is None or target == self.state else target


class Session(SessionState):
    """A session driven through a blocking ``Arbiter``."""

    def __init__(self, arbiter: Arbiter, answer: Mapping[str, Any]):
        self.arbiter = arbiter
        super().__init__(answer)

    # -- decisions --

    def decide(
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
        """Decide at ``point`` for this session; with ``apply`` (the default) the server moves the
        session through the point's state map in the same call, provided the session is still in
        ``expected_state`` (the caller's, else ``self.state``; a stale one is ``StateMismatch``)."""
        request = self._decide_request(input, candidate, candidate_raw, facts, tokens, llm)
        self._last_decide = {"point": point, **request}
        sent = self._expected_state(apply, expected_state)
        try:
            answer = self.arbiter.decide(
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

    def state_map(self, point: str, revision: int) -> dict[str, str] | None:
        """The point's outcome → state map as the server serves it (None while it serves none)."""
        key = (point, revision)
        if key not in self._state_maps:
            served = self.arbiter.point(point).get("state_map")
            self._state_maps[key] = dict(served) if isinstance(served, Mapping) else None
        return self._state_maps[key]

    def follow(self, decision: Decision | NeedsCandidate, *, state_map: Mapping[str, str] | None = None) -> Move | None:
        """Move to the state the decision's outcome maps to (nothing when it maps to none or to here).

        A decision made with ``apply`` has moved already: its answer is taken and nothing is sent. On a
        ``StateMismatch`` (another worker moved the session) the last decide is asked again, without
        ``apply``, in the state the refusal reports, and its outcome followed once more."""
        session = decision.get("session")
        if session is not None:
            self.absorb(decision)
            if "from" in session:  # decided with apply: the session has moved (or stayed) already
                return None
        if decision["needs_candidate"] or decision["decision"] is None:
            raise ValueError("this answer needs a candidate: decide again with the model's candidate first")
        mapping = state_map if state_map is not None else self.state_map(decision["point"], decision["revision"])
        if mapping is None:
            raise ValueError("the server serves no state_map for this point yet: pass state_map=")
        target = self._target(decision, mapping)
        if target is None:
            return None
        try:
            return self.move(target, decision_id=decision["id"])
        except StateMismatch:
            if self._last_decide is None:
                raise
            again = dict(self._last_decide)
            fresh = self.decide(again.pop("point"), apply=False, **again)
            target = self._target(fresh, mapping)
            return None if target is None else self.move(target, decision_id=fresh["id"])

    # -- moves and checks --

    def move(
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
            answer = self.arbiter.session_move(
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

    def update_fields(self, updates: dict[str, Any], *, idempotency_key: str | None = None) -> FieldsUpdated:
        """Set (``None`` clears) fields of this session in the state it is in, all or nothing; a refusal
        (``InvalidFields``, ``FieldsMissing``, ``StateMismatch``, …) is raised after the state it carries is taken."""
        try:
            answer = self.arbiter.session_fields_update(
                self.session_id, updates, expected_state=self.state, idempotency_key=idempotency_key
            )
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    def event(
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
            answer = self.arbiter.session_event(
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

    def check_action(self, type: str, params: Mapping[str, Any] | None = None) -> ActionAllowed:
        """Whether ``type`` may be done now; a refusal (``ActionNotAllowed``) is raised after its
        ``allowed_actions`` and any handoff are taken."""
        try:
            answer = self.arbiter.session_action(self.session_id, type, dict(params) if params is not None else None)
        except SessionRefused as error:
            self._refused(error)
            raise
        self.allowed_actions = list(answer["allowed_actions"])
        self.absorb(answer)
        return answer

    def call_tool(
        self,
        name: str,
        input: Mapping[str, Any],
        fn: Callable[[Any], Any],
        *,
        operation_id: str | None = None,
        max_wait_s: float = 60.0,
        wait_for_breaker: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Any:
        """Run ``fn(input)`` under the tool's contract: checked first, its result reported, retried when
        the policy says so, and its output returned (see arbiter_client.tools for each step). ``fn``
        raises ``ToolError(code, message)`` for a declared failure; a give-up raises ``ToolGaveUp``."""
        return tools.drive(
            self,
            name,
            input,
            fn,
            operation_id=operation_id,
            max_wait_s=max_wait_s,
            wait_for_breaker=wait_for_breaker,
            sleep=sleep,
        )

    def report_anomaly(self, code: str, *, detail: str | None = None, raw: str | None = None) -> AnomalyRecorded:
        answer = self.arbiter.session_anomaly(self.session_id, code, detail=detail, raw=raw)
        self.absorb(answer)
        return answer

    def trace(self, events: list[dict[str, Any]], *, turn_id: str | None = None) -> TraceRecorded:
        """Report the runtime's own events of a turn (``arbiter_client.trace`` builds them) in one request:
        sampling keeps or drops a turn whole, and keeps every turn with an error."""
        return self.arbiter.session_trace(self.session_id, events, turn_id=turn_id)

    def trace_llm_call(self, *, model: str, turn_id: str | None = None, **details: Any) -> TraceRecorded:
        """Report one model call: ``model`` (``gen_ai.request.model``) and any of ``prompt_version``,
        ``input_tokens``, ``output_tokens``, ``latency_ms``, ``status``, ``point``, ``provider``,
        ``operation``, ``response_model``, ``error_type``, ``input_messages``, ``output_messages``,
        ``event_id`` (``arbiter_client.trace.llm_call_event``)."""
        return self.trace([llm_call_event(model=model, **details)], turn_id=turn_id)

    def interrupt(self, to: str, *, reason: str | None = None) -> Move:
        try:
            answer = self.arbiter.session_interrupt(self.session_id, to, expected_state=self.state, reason=reason)
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    def resume(self, *, reason: str | None = None) -> Move:
        try:
            answer = self.arbiter.session_resume(self.session_id, expected_state=self.state, reason=reason)
        except SessionRefused as error:
            self._refused(error)
            raise
        self.absorb(answer)
        return answer

    def refresh(self) -> SessionDetail:
        answer = self.arbiter.session_get(self.session_id)
        self.absorb(answer)
        return answer

    def timeline(self, *, after: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's events (moves, decisions, anomalies, tool calls …) after sequence id ``after``, or
        after where the last call stopped (``timeline_cursor``), in the service-wide order, every page read:
        a runtime that calls it again gets only what happened since."""
        cursor = after if after is not None else self.timeline_cursor
        entries: list[dict[str, Any]] = []
        while True:
            page = self.arbiter.session_timeline(self.session_id, after=cursor, limit=limit)
            found, more = self._timeline_page(page, cursor)
            entries.extend(found)
            if not more:
                return entries
            cursor = self.timeline_cursor

    def changes(self, *, after: int | None = None, wait: int = 0) -> list[dict[str, Any]]:
        """What happened since ``after`` (default: where the last ``timeline()`` or ``changes()`` stopped),
        waiting up to ``wait`` seconds (at most 30) when nothing has yet; the session's state, ``handed_off``
        and ``claimed_by`` taken from the answer — a runtime checks ``handed_off`` before it speaks."""
        cursor = after if after is not None else self.timeline_cursor
        return self._changes_answer(self.arbiter.session_changes(self.session_id, after=cursor, wait=wait))

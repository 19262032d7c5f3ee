"""Every operation of docs/openapi.yaml as a ``Call``: what the sync and async clients send.

``OPERATIONS`` names, per ``operationId``, the client method that performs it; the contract test
checks that every path and method of the document has one, and that its answer type matches.
Members given as ``None`` are left out of a body (the server treats a missing member as its default).
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from arbiter_client._transport import Call
from arbiter_client.types import (
    ActionAllowed,
    AnomalyRecorded,
    ChangeRequest,
    ChangeRequestList,
    Changes,
    ConfigDocument,
    Decision,
    DecisionMap,
    DecisionRecord,
    EventMove,
    FieldsUpdated,
    Machine,
    Move,
    NeedsCandidate,
    Point,
    PointList,
    QueueItem,
    QueueList,
    QueueMove,
    Replay,
    SessionCreated,
    SessionDetail,
    Simulation,
    Timeline,
    ToolBreakerChange,
    ToolBreakerList,
    ToolCallDecision,
    ToolCallStarted,
    ToolResult,
    TraceRecorded,
)

API = "/api/v1"

OPERATIONS = {
    "decisionCreate": "decide",
    "decisionDetail": "decision",
    "decisionReplay": "replay",
    "pointList": "points",
    "pointDetail": "point",
    "machineDetail": "machine",
    "sessionTimeline": "session_timeline",
    "sessionChanges": "session_changes",
    "sessionCreate": "session_create",
    "sessionDetail": "session_get",
    "sessionTransition": "session_move",
    "sessionEvent": "session_event",
    "sessionFieldsUpdate": "session_fields_update",
    "sessionAction": "session_action",
    "sessionInterrupt": "session_interrupt",
    "sessionResume": "session_resume",
    "sessionAnomalyCreate": "session_anomaly",
    "sessionTrace": "session_trace",
    "toolCallCreate": "tool_call_check",
    "toolCallResult": "tool_call_result",
    "simulationCreate": "simulate",
    "changeRequestList": "change_requests",
    "changeRequestCreate": "change_request_create",
    "changeRequestDetail": "change_request",
    "changeRequestApprove": "change_request_approve",
    "changeRequestReject": "change_request_reject",
    "changeRequestWithdraw": "change_request_withdraw",
    "decisionMapGet": "decision_map",
    "decisionMapCsv": "decision_map_csv",
    "queueList": "queue",
    "queueClaim": "queue_claim",
    "queueRelease": "queue_release",
    "queueReturn": "queue_return",
    "queueResolve": "queue_resolve",
    "toolBreakerList": "tool_breakers",
    "toolBreakerChange": "tool_breaker_change",
    "queueApprove": "queue_approve",
    "queueReject": "queue_reject",
    "configGet": "config_document",
    "openapiDocument": "openapi_document",
}


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


def _body(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None}


def _key(idempotency_key: str | None) -> dict[str, str]:
    """The caller's key, or a new one: one per call, kept across its retries."""
    return {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def decide(
    point: str,
    *,
    input: str | None = None,
    session_id: str | None = None,
    candidate: dict[str, Any] | None = None,
    candidate_raw: str | None = None,
    facts: dict[str, Any] | None = None,
    tokens: dict[str, Any] | None = None,
    llm: dict[str, Any] | None = None,
    apply: bool | None = None,
    expected_state: str | None = None,
    idempotency_key: str | None = None,
) -> Call[Decision | NeedsCandidate]:
    body = _body(
        point=point,
        input=input,
        session_id=session_id,
        candidate=candidate,
        candidate_raw=candidate_raw,
        facts=facts,
        tokens=tokens,
        llm=llm,
        apply=apply,
        expected_state=expected_state,
    )
    return Call("POST", f"{API}/decisions", json=body, headers=_key(idempotency_key))


def decision(decision_id: str) -> Call[DecisionRecord]:
    return Call("GET", f"{API}/decisions/{_segment(decision_id)}")


def replay(decision_id: str) -> Call[Replay]:
    return Call("GET", f"{API}/decisions/{_segment(decision_id)}/replay")


def points() -> Call[PointList]:
    return Call("GET", f"{API}/points")


def point(point_key: str) -> Call[Point]:
    return Call("GET", f"{API}/points/{_segment(point_key)}")


def machine(machine_key: str) -> Call[Machine]:
    return Call("GET", f"{API}/machines/{_segment(machine_key)}")


def session_timeline(session_id: str, *, after: int | None = None, limit: int | None = None) -> Call[Timeline]:
    """One page of the session's history in the service-wide order; pass the page's ``next`` (a sequence id)
    as ``after`` for the events that follow."""
    query = {k: v for k, v in (("after", after), ("limit", limit)) if v is not None}
    return Call("GET", f"{API}/sessions/{_segment(session_id)}/timeline", params=query or None)


LONG_POLL_MARGIN = 10.0  # seconds a long poll's answer may take beyond its wait (the server's own work, a queue)


def session_changes(
    session_id: str, *, after: int | None = None, wait: int | None = None, limit: int | None = None
) -> Call[Changes]:
    """The session's events after sequence id ``after`` and the session now; without any yet, the server
    waits up to ``wait`` seconds (at most 30) for one. The read timeout is the wait plus a margin."""
    query = {k: v for k, v in (("after", after), ("wait", wait), ("limit", limit)) if v is not None}
    timeout = None if not wait else wait + LONG_POLL_MARGIN
    return Call("GET", f"{API}/sessions/{_segment(session_id)}/changes", params=query or None, timeout=timeout)


def session_create(
    machine: str, *, session_id: str | None = None, context: dict[str, Any] | None = None
) -> Call[SessionCreated]:
    return Call("POST", f"{API}/sessions", json=_body(machine=machine, session_id=session_id, context=context))


def session_get(session_id: str) -> Call[SessionDetail]:
    return Call("GET", f"{API}/sessions/{_segment(session_id)}")


def session_move(
    session_id: str,
    to: str,
    *,
    expected_state: str,
    reason: str | None = None,
    decision_id: str | None = None,
    updates: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> Call[Move]:
    body = _body(to=to, expected_state=expected_state, reason=reason, decision_id=decision_id, updates=updates)
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/transitions", json=body, headers=_key(idempotency_key))


def session_fields_update(
    session_id: str, updates: dict[str, Any], *, expected_state: str, idempotency_key: str | None = None
) -> Call[FieldsUpdated]:
    """Set (``None`` clears) some of the session's fields, all or nothing; the answer says what was normalised."""
    body = _body(expected_state=expected_state, updates=updates)
    return Call("PATCH", f"{API}/sessions/{_segment(session_id)}/fields", json=body, headers=_key(idempotency_key))


def session_event(
    session_id: str,
    event: str,
    *,
    expected_state: str,
    updates: dict[str, Any] | None = None,
    decision_id: str | None = None,
    proposed_by: str | None = None,
    idempotency_key: str | None = None,
) -> Call[EventMove]:
    """Send the machine's event ``event``; ``updates`` set fields with its move (all or nothing)."""
    body = _body(
        event=event, expected_state=expected_state, updates=updates, decision_id=decision_id, proposed_by=proposed_by
    )
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/events", json=body, headers=_key(idempotency_key))


def session_action(session_id: str, type: str, params: dict[str, Any] | None = None) -> Call[ActionAllowed]:
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/actions", json=_body(type=type, params=params))


def session_interrupt(session_id: str, to: str, *, expected_state: str, reason: str | None = None) -> Call[Move]:
    body = _body(to=to, expected_state=expected_state, reason=reason)
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/interrupt", json=body)


def session_resume(session_id: str, *, expected_state: str, reason: str | None = None) -> Call[Move]:
    body = _body(expected_state=expected_state, reason=reason)
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/resume", json=body)


def session_anomaly(
    session_id: str, code: str, *, detail: str | None = None, raw: str | None = None
) -> Call[AnomalyRecorded]:
    body = _body(code=code, detail=detail, raw=raw)
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/anomalies", json=body)


def session_trace(session_id: str, events: list[dict[str, Any]], *, turn_id: str | None = None) -> Call[TraceRecorded]:
    """Report events (``arbiter_client.trace``) as one batch. Sent again after a lost answer only when
    every event has an ``event_id`` (the service records each id once)."""
    body = _body(turn_id=turn_id, events=events)
    repeatable = all(isinstance(e, dict) and e.get("event_id") for e in events)
    return Call("POST", f"{API}/sessions/{_segment(session_id)}/trace", json=body, repeatable=repeatable)


_TOOL_FINAL = frozenset({"circuit_open", "tool_concurrency"})


def tool_call_check(
    session_id: str,
    tool: str,
    input: dict[str, Any],
    *,
    expected_state: str,
    operation_id: str | None = None,
) -> Call[ToolCallStarted]:
    """May the session call ``tool`` with ``input`` now: ``201`` with the attempt's ``operation_id``,
    ``attempt``, ``deadline`` and ``timeout_ms``, or ``202`` while a person has to approve it (the answer
    is then the ``awaiting_approval`` problem document; ask again with its ``operation_id``)."""
    body = _body(tool=tool, input=input, expected_state=expected_state, operation_id=operation_id)
    path = f"{API}/sessions/{_segment(session_id)}/tool-calls"
    # With an operation id, a repeat is answered with the attempt already started: safe to send again.
    return Call("POST", path, json=body, repeatable=operation_id is not None, final_codes=_TOOL_FINAL)


def tool_call_result(
    operation_id: str,
    *,
    duration_ms: int,
    output: Any = None,
    error: dict[str, Any] | None = None,
) -> Call[ToolResult]:
    """Report the attempt in flight: its ``output``, or its ``error`` (``{code, message?}``); the answer's
    ``next`` says ``done``, ``retry`` (after ``retry_after_ms``) or ``give_up``."""
    body: dict[str, Any] = {"duration_ms": duration_ms}
    if error is not None:
        body["error"] = error
    else:
        body["output"] = output
    return Call("POST", f"{API}/tool-calls/{_segment(operation_id)}/result", json=body, repeatable=True)


def simulate(
    point: str,
    *,
    input: str | None = None,
    facts: dict[str, Any] | None = None,
    session_state: str | None = None,
    candidate: dict[str, Any] | None = None,
    candidate_raw: str | None = None,
    revision: int | None = None,
    change_request: int | None = None,
) -> Call[Simulation]:
    body = _body(
        point=point,
        input=input,
        facts=facts,
        session_state=session_state,
        candidate=candidate,
        candidate_raw=candidate_raw,
        revision=revision,
        change_request=change_request,
    )
    return Call("POST", f"{API}/simulations", json=body)


def change_requests(*, state: str | None = None) -> Call[ChangeRequestList]:
    return Call("GET", f"{API}/change-requests", params={"state": state})


def change_request_create(config: str, *, reason: str, apply_at: str | None = None) -> Call[ChangeRequest]:
    return Call("POST", f"{API}/change-requests", json=_body(config=config, reason=reason, apply_at=apply_at))


def change_request(request_id: int) -> Call[ChangeRequest]:
    return Call("GET", f"{API}/change-requests/{int(request_id)}")


def change_request_approve(
    request_id: int, *, digest: str, reason: str | None = None, override_reason: str | None = None
) -> Call[ChangeRequest]:
    body = _body(digest=digest, reason=reason, override_reason=override_reason)
    return Call("POST", f"{API}/change-requests/{int(request_id)}/approve", json=body)


def change_request_reject(request_id: int, *, reason: str | None = None) -> Call[ChangeRequest]:
    return Call("POST", f"{API}/change-requests/{int(request_id)}/reject", json=_body(reason=reason))


def change_request_withdraw(request_id: int, *, reason: str | None = None) -> Call[ChangeRequest]:
    return Call("POST", f"{API}/change-requests/{int(request_id)}/withdraw", json=_body(reason=reason))


def decision_map(*, days: int | None = None, point: str | None = None) -> Call[DecisionMap]:
    return Call("GET", f"{API}/reports/decision-map", params={"days": days, "point": point})


def decision_map_csv(*, days: int | None = None, point: str | None = None) -> Call[str]:
    return Call(
        "GET",
        f"{API}/reports/decision-map.csv",
        params={"days": days, "point": point},
        headers={"Accept": "text/csv"},
        expect="text",
    )


def queue(*, holder: str | None = None, reason: str | None = None) -> Call[QueueList]:
    return Call("GET", f"{API}/queue", params={"holder": holder, "reason": reason})


def queue_claim(session_pk: int, *, note: str | None = None) -> Call[QueueItem]:
    return Call("POST", f"{API}/queue/{int(session_pk)}/claim", json=_body(note=note))


def queue_release(session_pk: int, *, note: str | None = None) -> Call[QueueItem]:
    return Call("POST", f"{API}/queue/{int(session_pk)}/release", json=_body(note=note))


def queue_return(session_pk: int, state: str, *, note: str | None = None) -> Call[QueueMove]:
    return Call("POST", f"{API}/queue/{int(session_pk)}/return", json=_body(state=state, note=note))


def queue_resolve(session_pk: int, state: str, *, note: str) -> Call[QueueMove]:
    return Call("POST", f"{API}/queue/{int(session_pk)}/resolve", json=_body(state=state, note=note))


def tool_breakers() -> Call[ToolBreakerList]:
    return Call("GET", f"{API}/tools/breakers")


def tool_breaker_change(name: str, action: str, *, reason: str) -> Call[ToolBreakerChange]:
    """``action``: ``"open"`` (stays open until a person closes it) or ``"close"``; the reason is kept."""
    return Call("POST", f"{API}/tools/{_segment(name)}/breaker", json=_body(action=action, reason=reason))


def queue_approve(session_pk: int, *, note: str | None = None) -> Call[ToolCallDecision]:
    """Approve the tool call a waiting session proposes (``agents.approve_tool_calls``)."""
    return Call("POST", f"{API}/queue/{int(session_pk)}/approve", json=_body(note=note))


def queue_reject(session_pk: int, *, note: str) -> Call[ToolCallDecision]:
    """Reject the tool call a waiting session proposes, saying why (``agents.approve_tool_calls``)."""
    return Call("POST", f"{API}/queue/{int(session_pk)}/reject", json=_body(note=note))


def openapi_document() -> Call[str]:
    return Call("GET", f"{API}/openapi.yaml", headers={"Accept": "application/yaml"}, expect="text")


def config() -> Call[str]:
    """The live configuration as YAML (``GET /api/v1/config``), the text ``change_request_create`` takes."""
    return Call(
        "GET", f"{API}/config", params={"format": "yaml"}, headers={"Accept": "application/yaml"}, expect="text"
    )


def config_document() -> Call[ConfigDocument]:
    """The live configuration as a JSON document."""
    return Call("GET", f"{API}/config", params={"format": "json"})

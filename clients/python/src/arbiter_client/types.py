"""The answers of the Arbiter API as TypedDicts, one per schema of docs/openapi.yaml.

Written by clients/python/scripts/typeddicts.py; tests/client/test_schema_drift.py fails when the two
differ. An answer is the JSON object itself: fields a newer server adds pass through untouched.
No ``from __future__ import annotations`` here: TypedDict must see ``NotRequired`` to tell required
keys from optional ones, so the classes come in the order they use each other.
"""

from typing import Any, NotRequired, TypedDict

SessionState = TypedDict(
    "SessionState",
    {
        "session_id": str,
        "machine": str,
        "state": str,
        "seq": int,
        "allowed_transitions": Any,
        "allowed_actions": Any,
        "allowed_events": Any,
        "handed_off": bool,
        "handoff_reason": str | None,
        "claimed_by": str | None,
        "feedback": list[str],
        "fields": dict[str, Any],
        "missing": dict[str, Any],
        "from": NotRequired[str],
    },
)


class ActionAllowed(TypedDict):
    allowed: bool
    allowed_actions: list[str]
    session: SessionState


class Anomalies(TypedDict):
    count: int
    latest: list[str]


class SessionDetail(TypedDict):
    session_id: str
    machine: str
    state: str
    seq: int
    allowed_transitions: Any
    allowed_actions: Any
    interrupt_stack: Any
    terminal: bool
    anomalies: Anomalies
    handoff_reason: str | None
    claimed_by: str | None
    feedback: list[str]
    seconds_in_state: float
    context: dict[str, Any]
    fields: dict[str, Any]
    missing: dict[str, Any]
    session: SessionState


class AnomalyRecorded(TypedDict):
    """The session after the anomaly (as `SessionDetail`), and whether it was handed off."""

    session_id: str
    machine: str
    state: str
    seq: int
    allowed_transitions: list[str]
    allowed_actions: list[str]
    interrupt_stack: list[str]
    terminal: bool
    anomalies: Anomalies
    handoff_reason: str | None
    claimed_by: str | None
    feedback: list[str]
    seconds_in_state: float
    context: dict[str, Any]
    fields: dict[str, Any]
    missing: dict[str, Any]
    handed_off: bool
    session: SessionState


class BreakerChange(TypedDict):
    id: int
    tool: str
    action: str
    actor: str
    reason: str
    created_at: str


class CandidateOut(TypedDict):
    decision: str
    confidence: float
    reason: str


class SupersededBy(TypedDict):
    record: str
    revision: int | None


class ChangeRequest(TypedDict):
    id: int
    state: str
    risk: str
    author: str
    reason: str
    created_at: str
    apply_at: str | None
    base_revision: int
    applied_revision: int | None
    risks: list[dict[str, Any]]
    digest: str
    diff: list[dict[str, Any]]
    approvals: list[dict[str, Any]]
    required_approvals: int
    superseded_by: SupersededBy | None
    failure: str | None
    impact: dict[str, Any]


class ChangeRequestList(TypedDict):
    change_requests: list[ChangeRequest]


TimelineEvent = TypedDict(
    "TimelineEvent",
    {
        "sequence_id": int,
        "type": str,
        "at": str,
        "seq": NotRequired[int],
        "from": NotRequired[str],
        "to": NotRequired[str],
        "kind": NotRequired[str],
        "actor": NotRequired[str],
        "reason": NotRequired[str],
        "decision_id": NotRequired[str | None],
        "fields": NotRequired[dict[str, Any]],
        "id": NotRequired[str],
        "point": NotRequired[str | None],
        "input": NotRequired[str | Any],
        "session_state": NotRequired[str | None],
        "candidate": NotRequired[Any | None],
        "candidate_invalid": NotRequired[bool],
        "decision": NotRequired[str],
        "ruled_by": NotRequired[str],
        "rule": NotRequired[str | None],
        "overridden": NotRequired[bool],
        "revision": NotRequired[int],
        "code": NotRequired[str],
        "detail": NotRequired[str],
        "raw": NotRequired[str],
        "state": NotRequired[str],
        "note": NotRequired[str],
        "operation_id": NotRequired[str],
        "tool": NotRequired[str],
        "attempt": NotRequired[int],
        "breaker_state": NotRequired[str],
        "deadline": NotRequired[str],
        "outcome": NotRequired[str | None],
        "output_summary": NotRequired[str | None],
        "finished_at": NotRequired[str | None],
        "late": NotRequired[bool | None],
        "duration_ms": NotRequired[int | None],
        "declared": NotRequired[bool],
        "message": NotRequired[str],
        "next": NotRequired[str | None],
    },
)


class Changes(TypedDict):
    session_id: str
    events: list[TimelineEvent]
    next: int
    has_more: bool
    session: SessionState


class ConfigDocument(TypedDict):
    """The configuration document (docs/config.md), as JSON."""

    version: int
    thresholds: list[dict[str, Any]]
    keyword_lists: list[dict[str, Any]]
    points: list[dict[str, Any]]
    machines: list[dict[str, Any]]
    tools: NotRequired[list[dict[str, Any]]]
    mcp_servers: NotRequired[list[dict[str, Any]]]


class MatchedRule(TypedDict):
    key: str
    priority: int
    outcome: str
    shadow: bool


class Rule(TypedDict):
    """The rule that decided."""

    key: str
    priority: int
    category: str


class Decision(TypedDict):
    """A decision that was made and logged."""

    id: str
    point: str
    decision: str
    ruled_by: str
    rule: Rule | None
    matched_rules: list[MatchedRule]
    candidate: CandidateOut | None
    overridden: bool
    needs_candidate: bool
    reason: str
    revision: int
    evaluated_us: int
    created_at: str
    feedback: NotRequired[list[str]]
    session: NotRequired[Any]


class DecisionMapModelRow(TypedDict):
    model: str | None
    prompt_version: str | None
    decisions: int
    with_candidate: int
    overridden: int
    override_rate: float | None
    anomalies: int
    anomaly_rate: float | None


class RuledByCounts(TypedDict):
    hard_rule: int
    llm_candidate: int
    default: int


class DecisionMapPoint(TypedDict):
    key: str
    name: str
    governance: str
    reasons: list[str]
    candidate_whitelist: list[str]
    default_outcome: str
    when_no_candidate: str
    rules: list[dict[str, Any]]
    rules_by_category: dict[str, Any]
    keyword_lists: list[dict[str, Any]]
    thresholds: list[dict[str, Any]]
    decisions: int
    by_ruled_by: RuledByCounts
    with_candidate: int
    overridden: int
    override_rate: float | None
    llm_calls_avoided: int
    needs_candidate: int
    anomalies: int
    anomalies_by_code: dict[str, Any]
    by_model: list[DecisionMapModelRow]
    tokens: dict[str, Any]
    ghost_failures: int
    ghost_failures_latest: list[dict[str, Any]]
    daily: list[dict[str, Any]]
    top_rules: list[dict[str, Any]]
    dead_rules: list[str]
    shadowed_rules: list[dict[str, Any]]
    pending_changes: list[dict[str, Any]]
    last_change: Any


class DecisionMap(TypedDict):
    generated_at: str
    window: dict[str, Any]
    revision: int | None
    governance: dict[str, Any]
    ghost_failure_seconds: int
    points: list[DecisionMapPoint]
    since_snapshot: Any


class LlmOut(TypedDict):
    """What the agent said made the candidate; a member it did not send is null."""

    model: str | None
    prompt_version: str | None
    latency_ms: int | None


class RecordedMatch(TypedDict):
    key: str
    priority: int
    category: str
    outcome: str
    shadow: bool


class DecisionRecord(TypedDict):
    """A logged decision, as stored (input and reasons masked)."""

    id: str
    created_at: str
    point: str
    agent: str
    session_id: str
    input: str
    masked: dict[str, Any]
    facts: dict[str, Any]
    masked_facts: dict[str, Any]
    candidate: CandidateOut | None
    candidate_raw: str | None
    candidate_invalid: bool
    decision: str
    ruled_by: str
    rule: Rule | None
    matched_rules: list[RecordedMatch]
    keyword_hits: dict[str, Any]
    overridden: bool
    reason: str
    revision: int
    engine: str
    evaluated_us: int
    tokens: dict[str, Any]
    llm: LlmOut | None


EventMove = TypedDict(
    "EventMove",
    {
        "event": str,
        "from": str,
        "to": str,
        "seq": int,
        "session": Any,
        "normalised": NotRequired[Any],
    },
)


class FieldsUpdated(TypedDict):
    """The session's fields after a fields update, which values were normalised, the session."""

    fields: dict[str, Any]
    normalised: dict[str, Any]
    session: SessionState


class Machine(TypedDict):
    key: str
    name: str
    description: str
    states: list[str]
    initial_state: str
    handoff_state: str
    terminal_states: list[str]
    transitions: dict[str, Any]
    actions: dict[str, Any]
    timeouts: dict[str, Any]
    max_anomalies: int


Move = TypedDict("Move", {"from": str, "state": str, "seq": int, "session": Any, "normalised": NotRequired[Any]})


class Prompt(TypedDict):
    """In a `needs_candidate` answer: what the model's prompt needs, from the point as the current"""

    outcomes: list[str]
    candidate_whitelist: Any
    min_confidence: float | None
    feedback: list[str]


class NeedsCandidate(TypedDict):
    """No decision yet; ask the LLM and call again with its candidate."""

    id: None
    point: str
    decision: None
    ruled_by: None
    rule: None
    matched_rules: list[MatchedRule]
    candidate: None
    overridden: bool
    needs_candidate: bool
    reason: str
    revision: int
    evaluated_us: int
    created_at: None
    feedback: NotRequired[list[str]]
    session: NotRequired[Any]
    prompt: NotRequired[Prompt]


class Point(TypedDict):
    key: str
    name: str
    description: str
    outcomes: list[str]
    candidate_whitelist: list[str]
    default_outcome: str
    when_no_candidate: str
    facts: dict[str, Any]
    min_confidence: float | None
    min_confidence_threshold: str | None
    machine: str | None
    state_map: dict[str, Any]
    fallback_state: str | None
    revision: int


class PointList(TypedDict):
    revision: int
    points: list[Point]


class QueueItem(TypedDict):
    id: int
    session_id: Any
    agent: str
    machine: str
    state: str
    reason: str
    waiting_seconds: float
    claimed_by: str | None
    proposed_call: Any


class QueueList(TypedDict):
    queue: list[QueueItem]


QueueMove = TypedDict("QueueMove", {"id": int, "session_id": str, "from": str, "state": str, "seq": int})


class ReplaySide(TypedDict):
    decision: str | None
    ruled_by: str | None
    rule: Rule | None
    matched_rules: list[MatchedRule]
    overridden: bool
    reason: str
    revision: int


class Replay(TypedDict):
    recorded: ReplaySide
    replayed: ReplaySide
    identical: bool
    masked_facts: list[str]
    revision: int
    current: ReplaySide | None


class SessionCreated(TypedDict):
    session_id: str
    machine: str
    state: str
    seq: int
    allowed_transitions: list[str]
    allowed_actions: list[str]
    session: SessionState


class Simulation(TypedDict):
    """The body `POST /api/v1/decisions` would answer, without `id`; `created_at` is always null"""

    point: str
    decision: str | None
    ruled_by: str | None
    rule: Rule | None
    matched_rules: list[MatchedRule]
    candidate: CandidateOut | None
    overridden: bool
    needs_candidate: bool
    reason: str
    revision: int
    evaluated_us: int
    created_at: None
    change_request: int | None


class Timeline(TypedDict):
    session_id: str
    events: list[TimelineEvent]
    next: int
    has_more: bool


class ToolBreaker(TypedDict):
    tool: str
    state: str
    forced: bool
    failures: int
    in_flight: int
    opened_at: str | None
    retry_after_ms: int | None
    circuit_breaker: Any | None
    max_concurrent: int | None
    recent_failures: dict[str, Any]
    recent_seconds: int


class ToolBreakerChange(TypedDict):
    breaker: ToolBreaker
    change: BreakerChange


class ToolBreakerList(TypedDict):
    store: str
    breakers: list[ToolBreaker]


class ToolCallDecision(TypedDict):
    id: int
    session_id: Any
    operation_id: str
    tool: str
    status: str
    decided_by: str
    note: str
    decided_at: str
    state: str
    seq: int


class ToolCallStarted(TypedDict):
    operation_id: str
    attempt: int
    deadline: str
    timeout_ms: int
    session: SessionState


class ToolResult(TypedDict):
    operation_id: str
    attempt: int
    next: str
    retry_after_ms: NotRequired[int]
    late: bool
    session: SessionState


class TraceRecorded(TypedDict):
    """`received` = `kept` (recorded now) + `dropped` (sampled out) + `duplicates` (recorded before)."""

    received: int
    kept: int
    dropped: int
    duplicates: int
    failed_turns: int
    sample_ratio: float

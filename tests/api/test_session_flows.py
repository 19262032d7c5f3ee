"""Sessions driven over HTTP by generated steps, against a model of the demo's two state machines.

Each example starts a fresh session of ``after_sales`` or ``change_address`` and takes up to a dozen
steps — legal and illegal moves (with or without the fields the target state requires), stale
``expected_state``, retries with an Idempotency-Key, actions in and outside the whitelist, interrupts
and resumes, reported anomalies, decisions with ``apply``, and the timeout sweep. The model says what
each answer must be; every answer is also checked against ``docs/openapi.yaml``; after each step the
session read back must agree with the model, and at the end its transitions must be numbered 1…seq
without a gap, each starting where the previous one ended.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from django.db.models import F
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agents.sessions.models import Session, Transition
from agents.sessions.timeouts import session_timeouts_sweep
from tests.support import ADDRESS_FIELDS, DEMO
from tests.support.contract import RESPONSE_CHECKS, problem_json_for_errors, schema

DEMO_CONFIG = yaml.safe_load(DEMO.read_text(encoding="utf-8"))
MACHINES = {m["key"]: m for m in DEMO_CONFIG["machines"]}
POINTS = {p["key"]: p for p in DEMO_CONFIG["points"]}
# Actions that are tools with a contract (the demo's own and its MCP server's `orders.*`): their params
# are checked against the contract, which tests/agents/tools and tests/agents/mcp cover.
CONTRACT_TOOLS = frozenset(t["name"] for t in DEMO_CONFIG.get("tools", []))

# Requests to the demo's points whose decision is known: (point, body fields, decision or None for
# needs_candidate, (rule, overridden) when a hard rule overrode a candidate). No candidate here is
# outside the point's outcomes or raw text: those record anomalies before the move (see
# test_session_contract.py for why they are left out of the model).
DECISIONS: list[tuple[str, dict[str, Any], str | None, str | None]] = [
    ("intent_routing", {"input": "我要投诉"}, "human_handoff", None),
    ("intent_routing", {"input": "我要投诉", "candidate": {"decision": "general_query", "confidence": 0.9}},
     "human_handoff", "high_risk_keyword"),
    ("intent_routing", {"input": "我要退款"}, "refund_review", None),
    ("intent_routing", {"input": "有几种颜色", "candidate": {"decision": "product_info", "confidence": 0.9}},
     "product_info", None),
    ("intent_routing", {"input": "关闭订单", "candidate": {"decision": "close_order", "confidence": 0.95}},
     "close_order", None),
    ("intent_routing", {"input": "好的", "candidate": {"decision": "general_query", "confidence": 0.8}},
     "general_query", None),
    ("intent_routing", {"input": "嗯", "candidate": {"decision": "general_query", "confidence": 0.3}},
     "intent_clarify", "low_confidence"),
    ("intent_routing", {"input": "嗯", "candidate": {"decision": "refund_request", "confidence": 0.9}},
     "human_handoff", "candidate_not_whitelisted"),
    ("intent_routing", {"input": "嗯"}, None, None),
    ("refund_approval", {"facts": {"refund_amount": 100}}, "auto_approve", None),
    ("refund_approval", {"facts": {"refund_amount": 800}}, "human_handoff", None),
]  # fmt: skip

OPERATIONS = {
    "create": schema["/api/v1/sessions"]["POST"],
    "detail": schema["/api/v1/sessions/{session_id}"]["GET"],
    "transition": schema["/api/v1/sessions/{session_id}/transitions"]["POST"],
    "action": schema["/api/v1/sessions/{session_id}/actions"]["POST"],
    "interrupt": schema["/api/v1/sessions/{session_id}/interrupt"]["POST"],
    "resume": schema["/api/v1/sessions/{session_id}/resume"]["POST"],
    "anomaly": schema["/api/v1/sessions/{session_id}/anomalies"]["POST"],
    "decide": schema["/api/v1/decisions"]["POST"],
}

JUNK_STATES = st.sampled_from(["nowhere", "INIT", "init ", "closed2"]) | st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20
).filter(str.strip)


@dataclass
class Model:
    """What the server should hold for one session."""

    machine: dict[str, Any]
    state: str
    seq: int = 0
    stack: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)  # every anomaly, counted or not, oldest first
    overruled: Counter[tuple[str, str]] = field(default_factory=Counter)
    handoff_reason: str | None = None
    held: set[str] = field(default_factory=set)  # the fields holding a valid value

    @property
    def terminal(self) -> bool:
        return self.state in self.machine.get("terminal", [])

    @property
    def in_the_human_queue(self) -> bool:
        """In the handoff state, however it got there: the agent may not move it out."""
        return self.state == self.machine["handoff"]

    @property
    def ended_or_handed_off(self) -> bool:
        return self.terminal or self.state == self.machine["handoff"]

    def allowed_transitions(self) -> list[str]:
        return [] if self.terminal else list(self.machine["transitions"].get(self.state, []))

    def allowed_actions(self) -> list[str]:
        return list(self.machine.get("actions", {}).get(self.state, []))

    def lacking(self, to: str) -> list[str]:
        """The fields ``to`` requires (``required_in``) that the session does not hold, in declared order."""
        declared = self.machine.get("fields", [])
        return [f["name"] for f in declared if to in f.get("required_in", []) and f["name"] not in self.held]

    def updates(self) -> dict[str, Any]:
        """Valid values for every field the machine declares (only the address machine has any)."""
        return {f["name"]: ADDRESS_FIELDS[f["name"]] for f in self.machine.get("fields", [])}

    def move(self, to: str, why: str = "agent") -> dict[str, Any]:
        """``why``: the handoff reason, should the move enter the handoff state (any move out clears it)."""
        move = {"from": self.state, "state": to, "seq": self.seq + 1}
        self.state, self.seq = to, self.seq + 1
        self.handoff_reason = why if to == self.machine["handoff"] else None
        return move

    def anomaly(self, code: str) -> bool:
        """Record one; apply the model-failure policy. Whether the session was handed off."""
        self.anomalies.append(code)
        self.recorded.append(code)
        if self.ended_or_handed_off or len(self.anomalies) < self.machine.get("max_anomalies", 3):
            return False
        self.move(self.machine["handoff"], "model_failure")
        return True

    def not_counted(self, code: str) -> bool:
        """Record one the policy does not count (a rule's refused mapping): never hands the session off."""
        self.recorded.append(code)
        return False

    def feedback_count(self) -> int:
        repeated = [code for code, n in Counter(self.anomalies).items() if n >= 2]
        return len(repeated) + len([k for k, n in self.overruled.items() if n >= 2])


class Flow:
    """One session's requests over HTTP, each validated against the spec."""

    def __init__(self, base_url: str, token: str, session_id: str) -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.session_id = session_id

    def call(self, name: str, body: dict[str, Any] | None = None, **headers: str) -> tuple[int, dict[str, Any]]:
        operation = OPERATIONS[name]
        kwargs: dict[str, Any] = {}
        if "{session_id}" in operation.path:
            kwargs["path_parameters"] = {"session_id": self.session_id}
        if body is not None:
            kwargs.update(body=body, media_type="application/json")
        case = operation.Case(**kwargs)
        response = case.call(base_url=self.base_url, headers={**self.headers, **headers})
        case.validate_response(response, checks=RESPONSE_CHECKS, additional_checks=[problem_json_for_errors])
        return response.status_code, _session_checked(response.json())


def _session_checked(body: Any) -> Any:
    """The answer with its session object checked against the answer's own members and taken out (the
    model below predicts the members; tests/agents pins the object's shape). A decide's keeps its move."""
    if not isinstance(body, dict) or not isinstance(body.get("session"), dict):
        return body
    session = body.pop("session")
    assert session["session_id"] and isinstance(session["handed_off"], bool), session
    if "state" in body:
        assert (session["state"], session["seq"]) == (body["state"], body["seq"]), (body, session)
    if "from" in session:  # a decide with apply: its move
        body["session"] = {key: session[key] for key in ("from", "state", "seq")}
    return body


def _refusal(status: int, body: dict[str, Any], expected_status: int, code: str, model: Model) -> None:
    assert (status, body["code"]) == (expected_status, code), body
    assert (body["state"], body["seq"]) == (model.state, model.seq), body


def _handed_off(status: int, body: dict[str, Any], model: Model) -> None:
    """A move the agent may not make: a person has the session. Refused, and counted as an anomaly."""
    _refusal(status, body, 409, "session_handed_off", model)
    assert body["handoff_reason"] == model.handoff_reason, body
    model.anomaly("session_handed_off")


def _other_state(data: st.DataObject, model: Model) -> str:
    others = [s for s in model.machine["states"] if s != model.state]
    # The server ignores surrounding whitespace: "init " is not stale in init.
    stale = st.sampled_from(others) | JUNK_STATES.filter(lambda s: s.strip() != model.state)
    return data.draw(stale, label="stale expected_state")


def step_transition(data: st.DataObject, flow: Flow, model: Model) -> str:
    allowed = model.allowed_transitions()
    kind = data.draw(st.sampled_from(["legal", "illegal", "stale"]), label="transition")
    if kind == "legal" and allowed:
        to = data.draw(st.sampled_from(allowed), label="to")
    else:
        illegal = [s for s in model.machine["states"] if s not in allowed]
        to = data.draw(st.sampled_from(illegal) | JUNK_STATES if illegal else JUNK_STATES, label="to")
    expected = _other_state(data, model) if kind == "stale" else model.state
    body = {"to": to, "expected_state": expected, "reason": data.draw(st.sampled_from(["", "model said so"]))}
    updates = model.updates() if data.draw(st.booleans(), label="with the fields") else {}
    if updates:
        body["updates"] = updates
    key = str(uuid.uuid4()) if data.draw(st.booleans(), label="with Idempotency-Key") else None
    headers = {"Idempotency-Key": key} if key else {}
    status, answer = flow.call("transition", body, **headers)
    if expected.strip() != model.state:
        _refusal(status, answer, 409, "state_mismatch", model)
        return "transition: state_mismatch"
    if model.terminal:
        _refusal(status, answer, 409, "session_closed", model)
        return "transition: session_closed"
    if model.in_the_human_queue:
        _handed_off(status, answer, model)
        return "transition: refused in the human queue"
    if to.strip() not in allowed:
        handed_off = model.anomaly("illegal_transition")
        _refusal(status, answer, 422, "illegal_transition", model)
        assert answer["allowed_transitions"] == model.allowed_transitions(), answer
        assert answer["handed_off"] is handed_off, answer
        return "transition: illegal" + (" → handed off" if handed_off else "")
    if lacking := [n for n in model.lacking(to.strip()) if n not in updates]:
        _refusal(status, answer, 422, "fields_missing", model)  # not an anomaly: the flow's, not the model's
        assert answer["missing"] == lacking, answer
        return "transition: fields_missing"
    if updates:  # set with the move; valid as sent, so nothing was normalised
        assert answer.pop("normalised") == {}, answer
        model.held |= set(updates)
    assert (status, answer) == (200, model.move(to.strip())), answer
    if key:
        # A retry returns the move already made, whatever happened since; another body is refused.
        status, again = flow.call("transition", body, **headers)
        again.pop("normalised", None)
        assert (status, again) == (200, answer)
        status, conflict = flow.call("transition", {**body, "reason": "another body"}, **headers)
        assert (status, conflict["code"]) == (409, "idempotency_conflict"), conflict
    return "transition: moved"


def step_action(data: st.DataObject, flow: Flow, model: Model) -> str:
    whitelist = model.allowed_actions()
    all_actions = sorted({a for acts in model.machine.get("actions", {}).values() for a in acts})
    action = data.draw(st.sampled_from(all_actions or ["request_param"]) | JUNK_STATES, label="action")
    body: dict[str, Any] = {"type": action}
    if action.strip() not in CONTRACT_TOOLS:
        body["params"] = {"name": "new_address"}
    status, answer = flow.call("action", body)
    if action.strip() in whitelist:
        assert (status, answer) == (200, {"allowed": True, "allowed_actions": whitelist}), answer
        return "action: allowed"
    handed_off = model.anomaly("action_not_allowed")
    _refusal(status, answer, 422, "action_not_allowed", model)
    assert (answer["allowed_actions"], answer["handed_off"]) == (model.allowed_actions(), handed_off), answer
    return "action: refused" + (" → handed off" if handed_off else "")


def step_interrupt(data: st.DataObject, flow: Flow, model: Model) -> str:
    machine = model.machine
    targets = [s for s in machine["states"] if s not in machine.get("terminal", []) and s != model.state]
    kind = data.draw(st.sampled_from(["valid", "invalid", "stale"]), label="interrupt")
    if kind == "valid" and targets:
        to = data.draw(st.sampled_from(targets), label="to")
    else:
        wrong = [s for s in machine["states"] if s not in targets]
        to = data.draw(st.sampled_from(wrong) | JUNK_STATES, label="to")
    expected = _other_state(data, model) if kind == "stale" else model.state
    status, answer = flow.call("interrupt", {"to": to, "expected_state": expected})
    if expected.strip() != model.state:
        _refusal(status, answer, 409, "state_mismatch", model)
        return "interrupt: state_mismatch"
    if model.terminal:
        _refusal(status, answer, 409, "session_closed", model)
        return "interrupt: session_closed"
    if model.in_the_human_queue:
        _handed_off(status, answer, model)
        return "interrupt: refused in the human queue"
    if to.strip() not in targets:
        _refusal(status, answer, 422, "illegal_transition", model)  # not an anomaly
        return "interrupt: refused"
    if lacking := model.lacking(to.strip()):
        _refusal(status, answer, 422, "fields_missing", model)
        assert answer["missing"] == lacking, answer
        return "interrupt: fields_missing"
    model.stack.append(model.state)
    assert (status, answer) == (200, model.move(to.strip())), answer
    return f"interrupt: level {len(model.stack)}"


def step_resume(data: st.DataObject, flow: Flow, model: Model) -> str:
    stale = data.draw(st.booleans(), label="stale resume")
    expected = _other_state(data, model) if stale else model.state
    status, answer = flow.call("resume", {"expected_state": expected})
    if expected.strip() != model.state:
        _refusal(status, answer, 409, "state_mismatch", model)
        return "resume: state_mismatch"
    if model.terminal:
        _refusal(status, answer, 409, "session_closed", model)
        return "resume: session_closed"
    if model.in_the_human_queue:
        _handed_off(status, answer, model)
        return "resume: refused in the human queue"
    if not model.stack:
        _refusal(status, answer, 409, "nothing_to_resume", model)
        return "resume: nothing_to_resume"
    if model.lacking(model.stack[-1]):  # never so today: fields cannot be cleared once required
        _refusal(status, answer, 422, "fields_missing", model)
        return "resume: fields_missing"
    assert (status, answer) == (200, model.move(model.stack.pop())), answer
    return "resume: back"


def step_anomaly(data: st.DataObject, flow: Flow, model: Model) -> str:
    code = data.draw(st.sampled_from(["invalid_json", "schema_violation", "retries_exhausted"]), label="code")
    status, answer = flow.call("anomaly", {"code": code, "detail": "from the agent", "raw": "{not json"})
    handed_off = model.anomaly(code)
    assert status == 201 and answer["handed_off"] is handed_off, answer
    assert (answer["state"], answer["seq"]) == (model.state, model.seq), answer
    return "anomaly" + (" → handed off" if handed_off else "")


def step_decide(data: st.DataObject, flow: Flow, model: Model) -> str:
    point_key, fields, decision, overruled_by = data.draw(st.sampled_from(DECISIONS), label="decision")
    status, answer = flow.call("decide", {"point": point_key, "session_id": flow.session_id, "apply": True, **fields})
    point = POINTS[point_key]
    if model.terminal:
        _refusal(status, answer, 409, "session_closed", model)
        return "decide: session_closed"
    if point["machine"] != model.machine["key"]:
        assert (status, answer["code"]) == (422, "machine_mismatch"), answer
        return "decide: machine_mismatch"
    if model.in_the_human_queue:
        _handed_off(status, answer, model)  # nothing decided, nothing logged
        return "decide: refused in the human queue"
    assert answer["decision"] == decision, answer
    stay = {"from": model.state, "state": model.state, "seq": model.seq}
    if decision is None:
        assert (status, answer["session"]) == (200, stay), answer
        return "decide: needs_candidate"
    assert status == 201, answer
    if overruled_by:
        model.overruled[(overruled_by, decision)] += 1
    target = point.get("state_map", {}).get(decision)
    fallback = point.get("fallback_state", "")
    if target is None or target == model.state:
        expected, what = stay, "stays"
    elif target in model.allowed_transitions():
        expected, what = model.move(target, "rule"), "moved"
    elif (
        model.anomaly("decision_move_not_allowed")
        if answer["ruled_by"] == "llm_candidate"
        else model.not_counted("rule_move_not_allowed")  # a rule's or the default's outcome: never counted
    ):
        expected, what = {**stay, "state": model.state, "seq": model.seq}, "→ handed off"
    elif not fallback or fallback == model.state or fallback not in model.allowed_transitions():
        expected, what = stay, "not allowed, stays"
    else:
        expected, what = model.move(fallback, "fallback"), "fell back"
    assert answer["session"] == expected, (answer, model)
    assert len(answer["feedback"]) == model.feedback_count(), (answer["feedback"], model)
    return f"decide: {what}"


def step_sweep(data: st.DataObject, flow: Flow, model: Model) -> str:
    # The Celery beat task's work, for this session: as if it had been in its state for a minute.
    Session.objects.filter(key=flow.session_id).update(
        state_entered_at=F("state_entered_at") - dt.timedelta(seconds=60)
    )
    session_timeouts_sweep()
    timeouts = model.machine.get("timeouts", {})
    if model.state in timeouts and not model.ended_or_handed_off:
        model.move(model.machine["handoff"], "timeout")
        return "sweep: timed out"
    return "sweep: nothing due"


STEPS = {
    "transition": step_transition,
    "action": step_action,
    "interrupt": step_interrupt,
    "resume": step_resume,
    "anomaly": step_anomaly,
    "decide": step_decide,
    "sweep": step_sweep,
}
WEIGHTED = st.sampled_from([*["transition"] * 4, *["action", "interrupt", "resume", "decide"] * 2, "anomaly", "sweep"])


def check_read_back(flow: Flow, model: Model) -> None:
    status, detail = flow.call("detail")
    assert status == 200, detail
    seen = {
        "state": detail["state"],
        "seq": detail["seq"],
        "allowed_transitions": detail["allowed_transitions"],
        "allowed_actions": detail["allowed_actions"],
        "interrupt_stack": detail["interrupt_stack"],
        "terminal": detail["terminal"],
        "anomalies": detail["anomalies"],
        "handoff_reason": detail["handoff_reason"],
        "feedback": len(detail["feedback"]),
    }
    assert seen == {
        "state": model.state,
        "seq": model.seq,
        "allowed_transitions": model.allowed_transitions(),
        "allowed_actions": model.allowed_actions(),
        "interrupt_stack": model.stack,
        "terminal": model.terminal,
        "anomalies": {"count": len(model.anomalies), "latest": model.recorded[::-1][:5]},
        "handoff_reason": model.handoff_reason,
        "feedback": model.feedback_count(),
    }, detail


def check_transition_log(session_id: str, model: Model) -> None:
    moves = list(
        Transition.objects.filter(session__key=session_id).order_by("seq").values_list("seq", "from_state", "to_state")
    )
    assert [seq for seq, _, _ in moves] == list(range(1, model.seq + 1)), moves
    initial = model.machine["initial"]
    assert [f for _, f, _ in moves] == [initial, *[t for _, _, t in moves]][: len(moves)], moves
    assert (moves[-1][2] if moves else initial) == model.state, moves


@given(data=st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.usefixtures("live_demo")
def test_sessions_follow_their_machine(live_server, live_token, data):
    machine_key = data.draw(st.sampled_from(sorted(MACHINES)), label="machine")
    session_id = f"flow-{uuid.uuid4().hex[:12]}"
    flow = Flow(live_server.url, live_token, session_id)
    status, created = flow.call("create", {"machine": machine_key, "session_id": session_id, "context": {"n": 1}})
    machine = MACHINES[machine_key]
    model = Model(machine=machine, state=machine["initial"])
    assert status == 201 and created == {
        "session_id": session_id,
        "machine": machine_key,
        "state": model.state,
        "seq": 0,
        "allowed_transitions": model.allowed_transitions(),
        "allowed_actions": model.allowed_actions(),
    }, created
    for _ in range(data.draw(st.integers(1, 20), label="steps")):
        name = data.draw(WEIGHTED, label="step")
        event(STEPS[name](data, flow, model))
        check_read_back(flow, model)
    check_transition_log(session_id, model)

"""One turn of the after-sales agent, in the order the rules-first design asks for:

1. ``decide`` the user's message with ``apply`` (rules first): a rule or the point's default may settle
   it at once, and the session moves with the decision in the same call (the helper sends the state it
   believes the session is in; when another worker moved it first, the message is decided once more
   where the session is now);
2. only on ``needs_candidate`` ask the model — its prompt from the answer's ``prompt`` when the server
   sends one, else from the point (outcomes, whitelist, ``min_confidence``) — and decide again with the
   candidate (parsed locally with ``parse_candidate``; unreadable output is sent as ``candidate_raw`` so
   that the server counts it against the model-failure limit);
3. when the decided intent needs a tool (``TOOLS``), the parameters the model extracted are written
   to the session's fields (``update_fields``: the server checks and normalises them, and keeps them —
   not the model's context window); a refused value is asked for again, the first field still
   ``missing`` for the tool's state is asked for, and once none is the machine's event moves the
   session into that state — with the parameters as its ``updates`` when they are what completes it,
   one call (the server refuses the move, ``fields_missing``, while one is lacking);
4. the reply is generated after the state is settled, from the state the session is in. Once a person
   has the conversation (handed off), the bot stops replying. Between turns the runtime long-polls the
   session's changes (``watch``): a timeout, a model-failure handoff or an operator claiming it is known
   before the customer's next message, not from a refused decide.
The model's prompt carries the state summary, the fields collected and the ones missing (from the
session object every answer carries), not the conversation's history (seed 003 §3.3).
Each turn records who decided (rule, LLM, default, or the person who has it), the model calls, and the
Arbiter calls it made.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from arbiter_client import (
    Arbiter,
    CandidateParseError,
    CircuitOpen,
    EventNotAllowed,
    FieldsMissing,
    GuardFailed,
    InvalidFields,
    InvalidToolInput,
    Session,
    SessionHandedOff,
    StateMismatch,
    ToolGaveUp,
    ToolRefused,
    llm_call_event,
    parse_candidate,
)
from opentelemetry import trace
from opentelemetry.trace import Tracer

from examples.after_sales_agent.llm import Model
from examples.after_sales_agent.parts import TOOL_REPLIES, CallLog, ToolTurn, Turn, model_params

BY = {"hard_rule": "rule", "llm_candidate": "llm", "default": "default"}
# The version of the prompt this agent builds (``prompt``): sent with each candidate, so that Arbiter's
# decision map shows a new prompt (or model) as a row of its own. Change it whenever the prompt changes.
PROMPT_VERSION = "after-sales-prompt-1"
REPLIES = {
    "human_handoff": "已为您转接人工客服，请稍候。",
    "intent_clarify": "抱歉，我没太明白，能再具体说说您遇到的问题吗？",
    "received": "收到，我来帮您处理。",
    "refund_review": "您的退款申请已提交审核。",
    "closed": "已处理完毕，感谢您的耐心。",
    "escalated": "您的问题已升级处理。",
    "awaiting_intent": "您好，请问需要办理什么业务？",
    "collecting_params": "好的，我来为您办理。",
    "executing": "信息已齐全，正在为您修改收货地址。",
}


@dataclass(frozen=True)
class Tool:
    """What an intent needs done: the tool, the state it runs in (the machine's fields ``required_in``
    that state are its parameters: seed 003's update_order contract) and the event that moves there."""

    action: str
    state: str
    event: str


TOOLS = {"change_address": Tool("update_order", "executing", "params_collected")}
ASK = {"new_address": "请告诉我新的收货地址。", "receiver_phone": "请提供收货人的手机号，以便为您修改地址。"}
NAMES = {"new_address": "新地址", "receiver_phone": "收货人手机号"}
ASK_AGAIN = {
    "new_address": "这个地址没能记下，请再发一次新的收货地址。",
    "receiver_phone": "这个手机号好像不对，请提供收货人的 11 位手机号。",
}


class AfterSalesAgent:
    def __init__(
        self,
        arbiter: Arbiter,
        model: Model,
        *,
        out: Callable[[str], None] | None = print,
        points: dict[tuple[str, int], Mapping[str, Any]] | None = None,
        tracer: Tracer | None = None,
    ):
        self.arbiter = arbiter
        # The agent's own spans (a turn, a model call, a tool run); the client sends the current one's
        # context with each call, so Arbiter's spans are their children in one trace. OpenTelemetry's global
        # tracer does nothing until an SDK is set up (run.py sets one up from the OTEL_* variables).
        self.tracer = tracer or trace.get_tracer("after_sales_agent")
        self.model = model
        self.out = out
        self.log = CallLog(arbiter)
        # The last session object an answer carried, by session: its ``fields`` and ``missing`` are what
        # the prompt is told (the client tracks the position; the fields are read from the answers).
        self.seen: dict[str, Mapping[str, Any]] = {}
        # The points read for prompts, by (key, revision): shared by the conversations of one runtime.
        self._points = points if points is not None else {}
        # Model calls not yet reported (``report_traces``), by session, and each session's turns so far.
        self.traces: dict[str, list[dict[str, Any]]] = {}
        self._turns: dict[str, int] = {}

    def report_traces(self, session: Session) -> Any:
        """Report the session's model calls made since the last report, in one request (each event names
        its turn, so the service samples turn by turn): off the turn's path, a turn costs no extra call."""
        events = self.traces.pop(session.session_id, [])
        if not events:
            return None
        # In a span of the agent's own, so that Arbiter's span for the report joins the agent's trace too.
        with self.tracer.start_as_current_span("agent.report_model_calls"):
            return session.trace(events)

    def _complete(self, session: Session, point: str, revision: int, system: str, user: str) -> str:
        """Ask the model, and keep its call to report (GenAI names; the prompt is the point's revision)."""
        started = time.perf_counter()
        event: dict[str, Any] = {"status": "ok"}
        try:
            output = self._model_call(system, user)
        except Exception as exc:
            event.update(status="error", error_type=type(exc).__name__)
            raise
        else:
            try:
                parse_candidate(output)
            except CandidateParseError:
                event.update(status="error", error_type="invalid_candidate_output")
            return output
        finally:
            usage = getattr(self.model, "last_usage", None)
            turn = self._turns.get(session.session_id, 0)
            self.traces.setdefault(session.session_id, []).append(
                llm_call_event(
                    model=getattr(self.model, "name", "unknown"),
                    provider=getattr(self.model, "provider", None),
                    prompt_version=PROMPT_VERSION,  # as its decides say (the map's rows)
                    point=point,
                    latency_ms=round((time.perf_counter() - started) * 1000),
                    input_tokens=usage[0] if usage else None,
                    output_tokens=usage[1] if usage else None,
                    turn_id=f"turn-{turn}",
                    **event,
                )
            )

    def close(self) -> None:
        self.log.close()

    def start(self, *, machine: str = "after_sales", session_id: str | None = None, **context: Any) -> Session:
        return self.arbiter.session(machine=machine, session_id=session_id, context=context or None)

    def use_tool(
        self,
        session: Session,
        name: str,
        input: Mapping[str, Any],
        fn: Callable[[Any], Any],
        *,
        sleep: Callable[[float], None] | None = None,
    ) -> ToolTurn:
        """Run the tool call the model asked for under Arbiter's policy (``session.call_tool``): the input
        is checked against the contract before the tool runs, declared failures are retried as the
        contract says, an open breaker fails fast, and a give-up has moved the session already."""
        # The GenAI semantic conventions' name for a tool's execution; Arbiter's check and result spans
        # join it as children.
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
            turn = self._use_tool(session, name, input, fn, sleep)
            span.set_attribute("arbiter.tool.outcome", turn.outcome)
            return turn

    def _use_tool(
        self,
        session: Session,
        name: str,
        input: Mapping[str, Any],
        fn: Callable[[Any], Any],
        sleep: Callable[[float], None] | None,
    ) -> ToolTurn:
        calls_before = self.arbiter.counter.requests
        turn = ToolTurn(name, dict(input))

        def counted(given: Any) -> Any:
            turn.tool_runs += 1
            return fn(given)

        options: dict[str, Any] = {} if sleep is None else {"sleep": sleep}
        try:
            turn.output = session.call_tool(name, input, counted, **options)
            turn.outcome = "done"
        except InvalidToolInput as refused:  # the model's arguments: ask the customer, never run the tool
            turn.outcome = turn.code = refused.code
            turn.errors = sorted(refused.errors)
        except CircuitOpen as refused:
            turn.outcome = turn.code = refused.code
        except ToolRefused as refused:
            turn.outcome, turn.code = "refused", refused.code
        except ToolGaveUp as gave_up:
            turn.outcome, turn.code = "gave_up", gave_up.code
        turn.state, turn.handed_off = session.state, session.handed_off
        turn.reply = TOOL_REPLIES.get(turn.outcome, TOOL_REPLIES["refused"])
        turn.arbiter_calls = self.arbiter.counter.requests - calls_before
        if self.out is not None:
            shown = ("tool", "outcome", "code", "errors", "tool_runs", "state", "arbiter_calls", "reply")
            self.out(json.dumps({k: getattr(turn, k) for k in shown}, ensure_ascii=False))
        return turn

    def watch(self, session: Session, *, wait: int = 30) -> bool:
        """While the customer types: wait up to ``wait`` seconds for what happens to the session
        (``GET …/changes``, from the last event seen) and say whether a person has it now — handed off, or
        claimed by an operator. The next ``turn`` then stays silent without deciding anything."""
        if session.timeline_cursor is None:  # where to start: the session's story so far, read once
            session.timeline()
        events = session.changes(wait=wait)
        taken = session.handed_off or session.claimed_by is not None
        if self.out is not None and events:
            shown = {"watched": [e["type"] for e in events], "handed_off": taken, "claimed_by": session.claimed_by}
            self.out(json.dumps(shown, ensure_ascii=False))
        return taken

    def prompt(self, point: str, revision: int, answer: Mapping[str, Any]) -> str:
        """What the model is told it may answer: from the answer's ``prompt`` when the server sends
        one, else from the point (read once per revision); and where the conversation is — the state,
        the fields collected, the ones missing — from the answer's session object, instead of the
        conversation's history (seed 003 §3.3: the state summary, collected and missing)."""
        served = answer.get("prompt")
        if isinstance(served, Mapping):
            facts: Mapping[str, Any] = served
        else:
            if (point, revision) not in self._points:
                self._points[(point, revision)] = self.arbiter.point(point)
            facts = self._points[(point, revision)]
        hints = "\n".join(f"- {line}" for line in answer.get("feedback") or [])
        return (
            "You route a customer's after-sales message. Answer with one JSON object only: "
            '{"decision": <outcome>, "confidence": <0..1>, "reason": <short>}.\n'
            f"Outcomes you may propose: {', '.join(facts.get('candidate_whitelist') or facts.get('outcomes') or [])}.\n"
            f"If you are less sure than {facts.get('min_confidence')}, say so with a low confidence."
            + (f"\nNotes from earlier turns:\n{hints}" if hints else "")
            + self._summary(answer.get("session"))
        )

    @staticmethod
    def _summary(session: Any) -> str:
        if not isinstance(session, Mapping):
            return ""
        collected = session.get("fields") or {}
        missing = session.get("missing") or {}
        lines = [f"\nThe conversation is in state {session.get('state')}."]
        if collected:
            lines.append(f"Collected so far: {json.dumps(collected, ensure_ascii=False, sort_keys=True)}.")
        if missing:
            lacking = "; ".join(f"{state}: {', '.join(names)}" for state, names in sorted(missing.items()))
            lines.append(f"Still missing (to enter): {lacking}.")
            lines.append('Put any of these the customer gives in "params": {<name>: <value as said>}.')
        return "\n".join(lines)

    def turn(self, session: Session, message: str, *, point: str = "intent_routing", facts: Any = None) -> Turn:
        """One customer message, in one span of the agent's: the decides, the model call and the session's
        moves are its children, Arbiter's spans included (ids and keys as attributes, never the message)."""
        attributes = {"arbiter.session.id": session.session_id, "arbiter.point": point}
        with self.tracer.start_as_current_span("agent.turn", attributes=attributes) as span:
            turn = self._turn(session, message, point, facts)
            decided = {
                "arbiter.decision": turn.decision,
                "arbiter.decided_by": turn.decided_by,
                "arbiter.state": turn.state,
            }
            span.set_attributes({k: v for k, v in decided.items() if v is not None})
            return turn

    def _turn(self, session: Session, message: str, point: str, facts: Any) -> Turn:
        calls_before, logged_before = self.arbiter.counter.requests, len(self.log.calls)
        self._turns[session.session_id] = self._turns.get(session.session_id, 0) + 1
        notes: list[str] = []
        turn = Turn(message, point, None, "person", session.state, None, 0, 0, notes=notes)
        silent = False
        if session.handed_off:
            # A person has it (as far as we know): read whether they gave it back, else stay silent.
            session.refresh()
            silent = session.handed_off
        if not silent:
            try:
                self._settle(session, turn, facts)
            except SessionHandedOff:
                silent = True  # handed off since our last answer (a timeout, an operator)
        turn.state, turn.handed_off = session.state, session.handed_off
        if silent:
            notes.append("a person has this conversation: the bot stays silent")
        else:  # a handoff made by this turn is announced once, by the handoff state's reply
            turn.reply = self._reply(turn, session.state)
        turn.arbiter_calls = self.arbiter.counter.requests - calls_before
        turn.calls = self.log.calls[logged_before:]
        if self.out is not None:
            shown = ("message", "decided_by", "decision", "state", "arbiter_calls", "model_calls", "reply")
            line = {k: getattr(turn, k) for k in shown}
            line.update({k: getattr(turn, k) for k in ("refused", "normalised", "missing") if getattr(turn, k)})
            self.out(json.dumps(line, ensure_ascii=False))
        return turn

    @staticmethod
    def _reply(turn: Turn, state: str) -> str:
        if turn.asked_for:
            return (ASK_AGAIN if turn.asked_for in turn.refused else ASK)[turn.asked_for]
        reply = REPLIES.get(state, "好的。")
        if turn.normalised:  # the server rewrote what the customer typed: say so, and what is kept
            kept = ", ".join(f"{NAMES.get(n, n)}记为 {turn.fields.get(n)}" for n in turn.normalised)
            reply = f"{kept}（已按格式整理）。{reply}"
        return reply

    def _settle(self, session: Session, turn: Turn, facts: Any) -> None:
        """Decide the message (the model only when the rules ask for it), then check its tool."""
        point, message, notes = turn.point, turn.message, turn.notes
        answer = self._decide(session, point, input=turn.message, facts=facts)
        self._saw(session, answer)
        params: dict[str, str] = {}
        if answer["needs_candidate"]:
            revision = answer["revision"]
            began = time.perf_counter()
            output = self._complete(session, point, revision, self.prompt(point, revision, answer), message)
            turn.model_calls += 1
            # Which model and prompt made the candidate: only on the decide that carries it.
            llm = {
                "model": self.model.name,
                "prompt_version": PROMPT_VERSION,
                "latency_ms": round(1000 * (time.perf_counter() - began)),
            }
            try:
                turn.candidate = dict(parse_candidate(output))
            except CandidateParseError as exc:
                notes.append(f"model output unreadable: {exc}")
                answer = self._decide(session, point, input=message, facts=facts, candidate_raw=output, llm=llm)
            else:
                params = model_params(output)
                answer = self._decide(session, point, input=message, facts=facts, candidate=turn.candidate, llm=llm)
            if turn.candidate is None and not session.handed_off and "handed_off" not in (answer.get("session") or {}):
                # Today's answer does not say whether the failure handed the session over (issue 23):
                # read the session, only on this path, before replying to a conversation a person may own.
                session.refresh()
                notes.append("read the session after an unreadable model output")
        self._saw(session, answer)
        turn.decision, turn.decided_by = answer["decision"], BY.get(str(answer["ruled_by"]), "nobody")
        if turn.decision in TOOLS and not session.handed_off:
            turn.asked_for = self._collect(session, TOOLS[turn.decision], params, turn)

    def _model_call(self, system: str, user: str) -> str:
        """The model call in a span named as the GenAI semantic conventions name one."""
        model = getattr(self.model, "model", None) or type(self.model).__name__
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
        with self.tracer.start_as_current_span(f"chat {model}", attributes=attributes):
            return self.model.complete(system, user)

    @staticmethod
    def _decide(session: Session, point: str, **request: Any) -> Any:
        try:
            return session.decide(point, **request)
        except StateMismatch:
            # Another worker moved the session first (refused by a server that checks expected_state
            # with apply); the refusal told the helper where it is: decide once more there.
            return session.decide(point, **request)

    def _saw(self, session: Session, answer: Mapping[str, Any]) -> Mapping[str, Any]:
        """Keep the session object an answer (or a refusal's problem) carries; the last one kept."""
        shown = answer.get("session")
        if isinstance(shown, Mapping) and "missing" in shown:
            self.seen[session.session_id] = shown
        return self.seen.get(session.session_id, {})

    def _collect(self, session: Session, tool: Tool, params: Mapping[str, str], turn: Turn) -> str | None:
        """Write what the model extracted into the session's fields, and move into the tool's state when
        nothing it requires is missing (with the event, in one call when these parameters complete it);
        the field to ask the customer for, if any."""
        shown = self.seen.get(session.session_id, {})
        # ``missing`` covers the current state and the next ones only: a tool's state further away (or
        # the one the session is in) is not this turn's to enter.
        one_step = session.state != tool.state and tool.state in (shown.get("allowed_transitions") or [])
        lacking = self._lacking(session, tool) if one_step else []
        if params and lacking and set(lacking) <= set(params):
            # These parameters complete it: set them with the event's move, all or nothing (seed 000's
            # TransitionResult: no fields changed without the state, nor the other way round).
            return self._enter(session, tool, turn, dict(params))
        if params:
            try:
                updated = session.update_fields(dict(params))
            except InvalidFields as refused:
                return self._refused(session, tool, turn, refused)
            self._took(session, updated, params, turn)
        if not one_step:
            return None
        turn.missing = self._lacking(session, tool)
        return turn.missing[0] if turn.missing else self._enter(session, tool, turn, None)

    def _enter(self, session: Session, tool: Tool, turn: Turn, updates: dict[str, str] | None) -> str | None:
        """Send the tool's event (with ``updates`` when given); the field to ask for when refused."""
        try:
            moved = session.event(tool.event, updates=updates)
        except InvalidFields as refused:
            return self._refused(session, tool, turn, refused)
        except FieldsMissing as refused:  # what we knew was stale: the server's word wins
            self._saw(session, refused.problem)
            turn.missing = [str(n) for n in refused.problem.get("missing") or []]
            turn.notes.append(f"{tool.event} refused (fields_missing): {', '.join(turn.missing)}")
            return turn.missing[0] if turn.missing else None
        except (EventNotAllowed, GuardFailed) as refused:  # the machine's events or guards changed
            self._saw(session, refused.problem)
            turn.notes.append(f"{tool.event} refused ({refused.problem.get('code')})")
            return None
        shown = self._took(session, moved, updates or {}, turn)
        turn.missing = []
        held = ", ".join(sorted(shown.get("fields") or {}))
        turn.notes.append(f"{tool.event}: {moved['from']} → {moved['to']} with {held}")
        # The session object says what may run here: no action check needed to know the tool may.
        if tool.action in (shown.get("allowed_actions") or []):
            turn.notes.append(f"{tool.action} may run now")
        return None

    def _refused(self, session: Session, tool: Tool, turn: Turn, refused: InvalidFields) -> str | None:
        """All or nothing: nothing was written, and the server recorded the anomaly field_invalid
        (counted toward the model-failure limit). The refused value is asked for again."""
        self._saw(session, refused.problem)
        turn.refused = sorted(refused.errors)
        turn.notes.append(f"refused by the server (invalid_fields): {', '.join(turn.refused)}")
        turn.missing = self._lacking(session, tool)
        return None if session.handed_off else turn.refused[0]

    def _took(self, session: Session, answer: Mapping[str, Any], params: Mapping[str, Any], turn: Turn) -> Any:
        """Record what a write with fields kept and normalised; the session object it carried."""
        shown = self._saw(session, answer)
        turn.fields = {k: v for k, v in (shown.get("fields") or {}).items() if k in params}
        turn.normalised = {k: list(v) for k, v in (answer.get("normalised") or {}).items()}
        for name, how in turn.normalised.items():
            turn.notes.append(f"{name} normalised by the server ({', '.join(how)})")
        return shown

    def _lacking(self, session: Session, tool: Tool) -> list[str]:
        missing = self.seen.get(session.session_id, {}).get("missing") or {}
        return [str(n) for n in missing.get(tool.state) or []]

"""One turn of the after-sales agent, in the order the rules-first design asks for:

1. ``decide`` the user's message with ``apply`` (rules first): a rule or the point's default may settle
   it at once, and the session moves with the decision in the same call;
2. only on ``needs_candidate`` ask the model — its prompt from the point (outcomes, whitelist,
   ``min_confidence``; from the answer's ``prompt`` once the server sends it) — and decide again with
   the candidate (parsed locally with ``parse_candidate``; unreadable output is sent as
   ``candidate_raw`` so that the server counts it against the model-failure limit);
3. the reply is generated after the state is settled, from the state the session is in.
Each turn records who decided (rule, LLM, default), the model calls and the Arbiter calls it cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arbiter_client import Arbiter, CandidateParseError, Session, parse_candidate

from examples.after_sales_agent.llm import Model

BY = {"hard_rule": "rule", "llm_candidate": "llm", "default": "default"}
REPLIES = {
    "human_handoff": "已为您转接人工客服，请稍候。",
    "intent_clarify": "抱歉，我没太明白，能再具体说说您遇到的问题吗？",
    "received": "收到，我来帮您处理。",
    "refund_review": "您的退款申请已提交审核。",
    "closed": "已处理完毕，感谢您的耐心。",
    "escalated": "您的问题已升级处理。",
}


@dataclass
class Turn:
    message: str
    point: str
    decision: str | None
    decided_by: str
    state: str
    reply: str
    arbiter_calls: int
    model_calls: int
    candidate: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


class AfterSalesAgent:
    def __init__(
        self,
        arbiter: Arbiter,
        model: Model,
        *,
        out: Callable[[str], None] | None = print,
        points: dict[tuple[str, int], Mapping[str, Any]] | None = None,
    ):
        self.arbiter = arbiter
        self.model = model
        self.out = out
        # The points read for prompts, by (key, revision): shared by the conversations of one runtime.
        self._points = points if points is not None else {}

    def start(self, *, machine: str = "after_sales", session_id: str | None = None, **context: Any) -> Session:
        return self.arbiter.session(machine=machine, session_id=session_id, context=context or None)

    def prompt(self, point: str, revision: int, answer: Mapping[str, Any]) -> str:
        """What the model is told it may answer: from the answer's ``prompt`` when the server sends
        one, else from the point (read once per revision)."""
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
        )

    def turn(self, session: Session, message: str, *, point: str = "intent_routing", facts: Any = None) -> Turn:
        calls_before = self.arbiter.counter.requests
        model_calls = 0
        notes: list[str] = []
        answer = session.decide(point, input=message, facts=facts)
        candidate: dict[str, Any] | None = None
        if answer["needs_candidate"]:
            system = self.prompt(point, answer["revision"], answer)
            output = self.model.complete(system, message)
            model_calls += 1
            try:
                candidate = dict(parse_candidate(output))
            except CandidateParseError as exc:
                notes.append(f"model output unreadable: {exc}")
                answer = session.decide(point, input=message, facts=facts, candidate_raw=output)
            else:
                answer = session.decide(point, input=message, facts=facts, candidate=candidate)
            if candidate is None and not session.handed_off and "handed_off" not in (answer.get("session") or {}):
                # Today's answer does not say whether the failure handed the session over (issue 23):
                # read the session, only on this path, before replying to a conversation a person may own.
                session.refresh()
                notes.append("read the session after an unreadable model output")
        state = session.state
        turn = Turn(
            message=message,
            point=point,
            decision=answer["decision"],
            decided_by=BY.get(str(answer["ruled_by"]), "nobody"),
            state=state,
            reply=REPLIES.get(state, "好的。"),
            arbiter_calls=self.arbiter.counter.requests - calls_before,
            model_calls=model_calls,
            candidate=candidate,
            notes=notes,
        )
        if self.out is not None:
            self.out(
                json.dumps(
                    {
                        "message": message,
                        "decided_by": turn.decided_by,
                        "decision": turn.decision,
                        "state": state,
                        "arbiter_calls": turn.arbiter_calls,
                        "model_calls": model_calls,
                        "reply": turn.reply,
                    },
                    ensure_ascii=False,
                )
            )
        return turn

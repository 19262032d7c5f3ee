"""The reference agent (examples/after_sales_agent) runs the seed conversations end to end against a
live server: who decided each turn, the decision, the state after it and the model calls come out as
each conversation says; an OpenAI-compatible model is reached over HTTP (a fake one served here).
The server holds the demo with the reference agent's additions (examples/after_sales_agent/config.py);
a state's timeout is made to pass by running the real timeout sweep, on this database, at a later now."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import arbiter_client as ac
import pytest
from django.utils import timezone

from agents.sessions.models import Anomaly, Session, Transition
from agents.sessions.timeouts import session_timeouts_sweep
from agents.tools.models import ToolCall
from agents.traces.models import TraceEvent
from examples.after_sales_agent.agent import PROMPT_VERSION, TOOLS, AfterSalesAgent
from examples.after_sales_agent.config import AGENT_POINTS, agent_config_text
from examples.after_sales_agent.conversations import HERE, conversation_load, conversation_paths
from examples.after_sales_agent.llm import OpenAICompatibleModel, ScriptedModel
from examples.after_sales_agent.run import conversation_run, summary
from rules.models import DecisionRecord
from tests.support import DEMO_TEXT
from tests.support.live_sqlite import connection_per_request


@pytest.fixture
def live_config() -> str:
    return agent_config_text(DEMO_TEXT)


@pytest.fixture
def bot(live):
    return live.agent(points=AGENT_POINTS)


def sweep_later(session, seconds: float) -> None:
    """The customer says nothing for ``seconds``: the timeout sweep runs as at that time from now."""
    moved = session_timeouts_sweep(now=timezone.now() + dt.timedelta(seconds=seconds + 1))
    assert moved == 1 and Session.objects.get(key=session.session_id).state == "human_handoff"


@pytest.mark.parametrize("path", conversation_paths(), ids=lambda p: p.stem)
def test_each_reference_conversation_comes_out_as_it_says(bot, path, capsys) -> None:
    outcome = conversation_run(bot, path, wait=sweep_later)
    assert outcome.mismatches == []
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["arbiter_calls"] for p in printed if "tool" not in p] == [t.arbiter_calls for t in outcome.turns]
    assert [p["arbiter_calls"] for p in printed if "tool" in p] == [t.arbiter_calls for t in outcome.tools]
    # A turn the rules settle costs one call, one that needs the model two (the point read at most once
    # more); a decide from a stale state is refused once (409) and made again; a tool's intent costs one
    # more (the fields write), and the event into the tool's state one more.
    for turn in outcome.turns:
        assert len(turn.calls) == turn.arbiter_calls
        made = [c for c in turn.calls if not c.endswith(" 422")]
        tool = turn.decision in TOOLS
        assert len(made) <= 1 + 2 * turn.model_calls + 1 + tool + (tool and turn.state == "executing"), turn


def test_all_conversations_together_give_the_calls_per_turn(bot) -> None:
    outcomes = [conversation_run(bot, path, out=None, wait=sweep_later) for path in conversation_paths()]
    totals = summary(outcomes)
    assert totals["turns"] == sum(len(o.turns) for o in outcomes) == 18
    assert totals["arbiter_calls_per_turn"] < 3.9


def test_the_tool_conversations_leave_the_server_s_record(bot) -> None:
    """The model's tool calls, through call_tool: a rate-limited query is one operation of three attempts;
    a phone the schema refuses is two anomalies and no operation; an order that does not exist gives up
    at once (ORDER_NOT_FOUND is not retryable) and hands the conversation to a person (on_exhausted)."""
    limited = conversation_run(bot, HERE / "tool_rate_limited.yaml", out=None)
    assert limited.mismatches == []
    calls = ToolCall.objects.filter(session__key=limited.session_id).order_by("created_at")
    assert [(c.tool, c.attempt, c.status) for c in calls] == [("query_order", 3, "done"), ("query_order", 1, "gave_up")]
    first = list(calls[0].attempts.order_by("attempt").values_list("error_code", flat=True))
    assert first == ["RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED", ""]
    assert Session.objects.get(key=limited.session_id).state == "human_handoff"

    refused = conversation_run(bot, HERE / "tool_invalid_phone.yaml", out=None)
    assert refused.mismatches == []
    assert [c.tool for c in ToolCall.objects.filter(session__key=refused.session_id)] == ["verify_phone"]
    codes = list(Anomaly.objects.filter(session_id=refused.session_id).values_list("code", flat=True))
    assert codes == ["invalid_tool_input", "invalid_tool_input"]


def test_the_phone_is_collected_into_the_session_field(bot) -> None:
    """change_address_with_phone through the agent: what the server kept, what it recorded, and what
    the model was told (the state, collected and missing; not the conversation so far)."""
    spec = conversation_load(HERE / "change_address_with_phone.yaml")
    model = ScriptedModel([step["model"] for step in spec["turns"]])
    outcome = conversation_run(bot, HERE / "change_address_with_phone.yaml", model=model, out=None)
    assert outcome.mismatches == []
    session = Session.objects.get(key=outcome.session_id)
    assert (session.state, session.field_values) == (
        "executing",
        {"new_address": "杭州市西湖区文三路138号", "receiver_phone": "13800138000"},
    )
    # "abc" was the model's extraction: refused, nothing written, recorded as field_invalid (pii: no value).
    (refused,) = Anomaly.objects.filter(session_id=session.key)
    assert refused.code == "field_invalid" and "abc" not in refused.detail and "receiver_phone" in refused.detail
    assert outcome.turns[1].calls[-1].endswith("/events 422") and outcome.turns[1].reply is not None
    assert "已按格式整理" in (outcome.turns[2].reply or "") and "13800138000" in (outcome.turns[2].reply or "")
    kinds = list(Transition.objects.filter(session=session).order_by("seq").values_list("kind", "to_state"))
    # The address on its own (a fields move); the phone with the event into executing, one move.
    assert kinds[-1][1] == "executing" and [k for k, _ in kinds].count("fields") == 1

    # Each decide that carried the model's output named the model and the prompt's version.
    with_model = DecisionRecord.objects.filter(session_id=session.key).exclude(candidate_decision="")
    assert with_model.exists()
    assert {(r.llm_model, r.llm_prompt_version) for r in with_model} == {("scripted-mock", PROMPT_VERSION)}
    assert all(r.llm_latency_ms is not None for r in with_model)
    assert not DecisionRecord.objects.filter(session_id=session.key, candidate_decision="", candidate_raw="").exclude(
        llm_model=""
    )

    first, second, third = (system for system, _user in model.prompts)
    assert "state awaiting_intent" in first and "Still missing" not in first  # nothing asked for yet
    assert "Collected so far" in second and "杭州市西湖区文三路138号" in second
    assert "executing: receiver_phone" in second and "executing: receiver_phone" in third
    # The prompt is the state, not the history: the customer's earlier messages are not in it.
    assert "我想把收货地址改成" not in second + third and "收货人电话是abc" not in third


def test_executing_is_refused_while_a_required_field_is_missing(bot) -> None:
    """After the address turn the phone is missing: an event or a move into executing is refused by the
    server (fields_missing, naming it), whatever the runtime believes."""
    model = ScriptedModel(
        [{"decision": "change_address", "confidence": 0.93, "params": {"new_address": "杭州市西湖区文三路138号"}}]
    )
    agent = AfterSalesAgent(bot, model, out=None)
    try:
        s = agent.start(machine="change_address", session_id="needs-phone")
        s.move("awaiting_intent")
        turn = agent.turn(s, "我想把收货地址改成杭州市西湖区文三路138号", point="address_intent")
    finally:
        agent.close()
    assert (turn.state, turn.asked_for, turn.missing) == ("collecting_params", "receiver_phone", ["receiver_phone"])
    for attempt in (lambda: s.event("params_collected"), lambda: s.move("executing")):
        with pytest.raises(ac.FieldsMissing) as missing:
            attempt()
        assert missing.value.problem["missing"] == ["receiver_phone"]
        assert s.state == "collecting_params" == Session.objects.get(key="needs-phone").state


class FakeOpenAI(BaseHTTPRequestHandler):
    answers: list[str] = []
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        answer = type(self).answers.pop(0)
        usage = {"prompt_tokens": 412, "completion_tokens": 23, "total_tokens": 435}
        choices = [{"index": 0, "message": {"role": "assistant", "content": answer}}]
        payload = json.dumps({"choices": choices, "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload.encode())))
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_openai() -> Iterator[str]:
    FakeOpenAI.answers, FakeOpenAI.seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_agent_with_an_openai_compatible_model_from_the_environment(
    bot, fake_openai, monkeypatch, settings
) -> None:
    settings.ARBITER_TRACE_SAMPLE_RATIO = 1.0  # every turn's model call kept, failed or not
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ARBITER_AGENT_MODEL", "tiny-model")
    FakeOpenAI.answers = [
        '{"decision": "general_query", "confidence": 0.88, "reason": "fault"}',
        '{"decision": "general_query", "confidence": 0.9, "reason": "fault"}',
    ]
    model = OpenAICompatibleModel.from_environment()
    try:
        outcome = conversation_run(bot, HERE / "refund_800.yaml", model=model, out=None)
    finally:
        model.close()
    assert outcome.mismatches == []
    assert [t.decided_by for t in outcome.turns] == ["llm", "rule", "rule"]
    (request,) = FakeOpenAI.seen
    assert (request["path"], request["auth"], request["body"]["model"]) == (
        "/v1/chat/completions",
        "Bearer sk-test",
        "tiny-model",
    )
    assert "general_query" in request["body"]["messages"][0]["content"]
    # Its model call reported with the GenAI names, the tokens the endpoint counted, the prompt's revision.
    (event,) = TraceEvent.objects.filter(session__key=outcome.session_id)
    assert (event.type, event.name, event.status, event.turn_id, event.point) == (
        "llm_call",
        "tiny-model",
        "ok",
        "turn-1",
        "intent_routing",
    )
    assert event.prompt_version == PROMPT_VERSION and event.duration_ms is not None
    assert (event.attributes["gen_ai.usage.input_tokens"], event.attributes["gen_ai.usage.output_tokens"]) == (412, 23)
    assert event.attributes["gen_ai.provider.name"] == "openai"


def test_the_agent_reports_its_model_calls_once_per_conversation(bot) -> None:
    # At the service's ratio (1% by default) a turn whose model answered nothing usable is kept anyway.
    sent = bot.counter.requests
    outcome = conversation_run(bot, HERE / "invalid_output.yaml", out=None)
    assert bot.counter.requests - sent == sum(t.arbiter_calls for t in outcome.turns) + 1 + 1  # start, report
    events = list(TraceEvent.objects.filter(session__key=outcome.session_id).order_by("sequence_id"))
    assert [(e.type, e.name, e.status, e.turn_id) for e in events] == [
        ("llm_call", "scripted-mock", "error", f"turn-{n}") for n in (1, 2, 3)
    ]
    assert {e.attributes["error.type"] for e in events} == {"invalid_candidate_output"}


def test_the_agent_watching_between_turns_stops_talking_when_a_person_takes_the_session(
    live, live_server, bot, tmp_path
) -> None:
    # One connection per request thread (SQLite): the long poll's watcher reads what the others commit.
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        ops = live.staff("ops", "queue_operators")
        agent = AfterSalesAgent(bot, ScriptedModel([]), out=None)
        session = agent.start()
        assert agent.watch(session, wait=0) is False  # nothing has happened yet: at once
        seen: list[bool] = []
        watching = threading.Thread(target=lambda: seen.append(agent.watch(session, wait=30)), daemon=True)
        watching.start()
        # Another worker of the runtime hands it off; an operator takes it.
        other = bot.session(session_id=session.session_id)
        other.move("human_handoff")
        watching.join(30)
        assert seen == [True] and session.handed_off
        ops.queue_claim(Session.objects.get(key=session.session_id).pk)
        assert agent.watch(session, wait=30) is True and session.claimed_by == "ops"
        turn = agent.turn(session, "还在吗？")
    assert turn.reply is None and turn.model_calls == 0 and turn.state == "human_handoff"
    assert not any("/decisions" in call for call in turn.calls)

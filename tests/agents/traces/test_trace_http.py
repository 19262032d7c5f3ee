"""``POST /api/v1/sessions/<id>/trace`` over HTTP (DRF's test client): recording, validation, masking,
sampling, idempotency and the raw-output switch."""

from __future__ import annotations

import pytest

from agents.traces.models import TraceEvent
from rules.config.records import point_save
from rules.models import DecisionPoint
from tests.support import agent_api
from tests.support.http import PROBLEM

pytestmark = pytest.mark.django_db

MODEL = "gpt-4o-mini-2024-07-18"


def trace(client, session, body):
    return client.post(f"/api/v1/sessions/{session}/trace", body, format="json")


def llm_call(**extra):
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.usage.input_tokens": 812,
        "gen_ai.usage.output_tokens": 96,
        **extra.pop("attributes", {}),
    }
    return {"type": "llm_call", "prompt_version": "intent-v3", "latency_ms": 640, "attributes": attributes, **extra}


def test_one_llm_call_is_recorded_with_its_genai_attributes(client, session, keep_all):
    answer = trace(client, session, llm_call(event_id="e-1", turn_id="turn-1"))
    assert answer.status_code == 200, answer.json()
    assert answer.json() == {
        "received": 1,
        "kept": 1,
        "dropped": 0,
        "duplicates": 0,
        "failed_turns": 0,
        "sample_ratio": 1.0,
    }
    event = TraceEvent.objects.get()
    assert (event.type, event.name, event.prompt_version, event.duration_ms, event.status) == (
        "llm_call",
        MODEL,
        "intent-v3",
        640,
        "ok",
    )
    assert event.attributes["gen_ai.usage.input_tokens"] == 812 and event.sequence_id is not None
    assert event.session.key == "t1" and event.turn_id == "turn-1"


def test_a_batch_gives_its_turn_to_each_event(client, session, keep_all):
    body = {
        "turn_id": "turn-7",
        "events": [
            llm_call(),
            {"type": "tool_invocation", "tool": "crm_lookup", "duration_ms": 320},
            {"type": "error_handled", "tool": "crm_lookup", "error_code": "PHONE_NOT_FOUND", "message": "no match"},
        ],
    }
    answer = trace(client, session, body)
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["kept"], answer.json()["failed_turns"]) == (3, 1)
    rows = list(TraceEvent.objects.order_by("sequence_id"))
    assert [r.type for r in rows] == ["llm_call", "tool_invocation", "error_handled"]
    assert {r.turn_id for r in rows} == {"turn-7"}
    assert rows[0].sequence_id < rows[1].sequence_id < rows[2].sequence_id
    assert (rows[2].status, rows[2].error_code, rows[2].name) == ("error", "PHONE_NOT_FOUND", "crm_lookup")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (llm_call(colour="red"), "colour"),
        (llm_call(attributes={"gen_ai.usage.input_tokens": "812"}), "events[0].attributes.gen_ai.usage.input_tokens"),
        (llm_call(attributes={"gen_ai.request.modle": "x"}), "events[0].attributes.gen_ai.request.modle"),
        ({"type": "llm_call", "attributes": {}}, "events[0].attributes.gen_ai.request.model"),
        (llm_call(latency_ms=-1), "latency_ms"),
        (llm_call(latency_ms=True), "latency_ms"),
        (llm_call(tool="crm"), "events[0].tool"),
        ({"type": "tool_invocation", "duration_ms": 3}, "events[0].tool"),
        ({"type": "error_handled", "tool": "crm"}, "events[0].error_code"),
        ({"type": "error_handled", "error_code": "X", "status": "ok"}, "events[0].status"),
        ({"type": "span"}, "type"),
        (llm_call(attributes={"gen_ai.request.model": "a\x00b"}), "events[0].attributes.gen_ai.request.model"),
        (llm_call(status="fine"), "status"),
        (llm_call(event_id="has space"), "event_id"),
        (llm_call(attributes={"gen_ai.response.model": "m" * 257}), "events[0].attributes.gen_ai.response.model"),
        ({"events": []}, "events"),
        ({"events": [llm_call()] * 101}, "events"),
        ({"events": [llm_call(event_id="a"), llm_call(event_id="a")]}, "events[1].event_id"),
        ({"events": [llm_call()], "extra": 1}, "extra"),
    ],
)
def test_invalid_reports_are_refused_with_the_field_named(client, session, keep_all, body, field):
    answer = trace(client, session, body)
    assert answer.status_code in (400, 422) and answer["Content-Type"] == PROBLEM, answer.content
    assert field in str(answer.json()["errors"]), answer.json()
    assert not TraceEvent.objects.exists()


def test_not_an_object_is_refused(client, session):
    answer = trace(client, session, [llm_call()])
    assert answer.status_code == 422 and answer["Content-Type"] == PROBLEM


def test_another_agents_session_is_unknown(client, session, keep_all):
    other = agent_api("other_bot", points=["intent_routing"])
    answer = trace(other, session, llm_call())
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_session"


def test_a_point_the_agent_may_not_use_is_refused(session, keep_all, demo):
    narrow = agent_api("narrow_bot", points=["refund_approval"])
    narrow.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "n1"}, format="json")
    answer = trace(narrow, "n1", llm_call(point="intent_routing"))
    assert answer.status_code == 403 and answer.json()["code"] == "point_not_allowed"


def test_a_point_the_agent_may_not_use_is_refused_in_a_turn_sampled_out_too(session, demo, settings):
    settings.ARBITER_TRACE_SAMPLE_RATIO = 0.0
    narrow = agent_api("narrow_bot", points=["refund_approval"])
    narrow.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "n1"}, format="json")
    answer = trace(narrow, "n1", llm_call(point="intent_routing", turn_id="dropped"))
    assert answer.status_code == 403 and answer.json()["code"] == "point_not_allowed"


def test_the_same_event_id_is_recorded_once(client, session, keep_all):
    body = {"events": [llm_call(event_id="e-1"), llm_call(event_id="e-2")]}
    assert trace(client, session, body).json()["kept"] == 2
    again = trace(client, session, {"events": [llm_call(event_id="e-2"), llm_call(event_id="e-3")]}).json()
    assert (again["kept"], again["duplicates"]) == (1, 1)
    assert TraceEvent.objects.count() == 3


def test_text_is_masked_with_the_builtin_patterns(client, session, keep_all):
    body = {"type": "error_handled", "tool": "crm", "error_code": "PHONE_NOT_FOUND", "message": "no 13812345678"}
    trace(client, session, body)
    assert TraceEvent.objects.get().attributes["exception.message"] == "no [phone]"


def test_text_is_masked_with_the_points_own_patterns(client, session, keep_all, actor):
    point = DecisionPoint.objects.get(key="intent_routing")
    point.mask_patterns = {"order": r"ORD-\d+"}
    point_save(point=point, actor=actor, reason="orders")
    trace(client, session, llm_call(point="intent_routing", attributes={"gen_ai.response.id": "ORD-99 a@b.co"}))
    assert TraceEvent.objects.get().attributes["gen_ai.response.id"] == "[order] [email]"


def test_sampling_keeps_a_failed_turn_and_drops_the_others_at_ratio_zero(client, session, settings):
    settings.ARBITER_TRACE_SAMPLE_RATIO = 0.0
    ok = trace(client, session, {"turn_id": "ok-turn", "events": [llm_call(), llm_call()]}).json()
    failed = trace(client, session, {"turn_id": "bad-turn", "events": [llm_call(), llm_call(status="error")]}).json()
    assert (ok["kept"], ok["dropped"]) == (0, 2)
    assert (failed["kept"], failed["dropped"], failed["failed_turns"]) == (2, 0, 1)
    assert set(TraceEvent.objects.values_list("turn_id", flat=True)) == {"bad-turn"}


RAW = {"gen_ai.input.messages": "my phone is 13812345678", "gen_ai.output.messages": [{"role": "assistant"}]}


def test_raw_model_input_and_output_are_dropped_while_the_switch_is_off(client, session, keep_all, actor):
    point = DecisionPoint.objects.get(key="intent_routing")
    point.store_raw_output = False
    point_save(point=point, actor=actor, reason="raw off")
    trace(client, session, llm_call(point="intent_routing", attributes=RAW))
    trace(client, session, llm_call(attributes=RAW))  # no point: no switch to turn it on
    for event in TraceEvent.objects.all():
        assert not set(RAW) & set(event.attributes)
        assert event.attributes["gen_ai.request.model"] == MODEL


def test_raw_model_input_and_output_are_kept_masked_while_the_switch_is_on(client, session, keep_all):
    assert DecisionPoint.objects.get(key="intent_routing").store_raw_output  # the demo turns it on
    trace(client, session, llm_call(point="intent_routing", attributes=RAW))
    attributes = TraceEvent.objects.get().attributes
    assert attributes["gen_ai.input.messages"] == "my phone is [phone]"
    assert attributes["gen_ai.output.messages"] == '[{"role": "assistant"}]'


def test_a_tool_invocation_with_an_error_code_failed_its_turn_unless_it_says_otherwise(client, session, settings):
    settings.ARBITER_TRACE_SAMPLE_RATIO = 0.0
    failed = {"type": "tool_invocation", "tool": "crm", "error_code": "TIMEOUT", "turn_id": "a"}
    answer = trace(client, session, {"events": [failed, {**failed, "turn_id": "b", "status": "ok"}]}).json()
    assert (answer["kept"], answer["dropped"], answer["failed_turns"]) == (1, 1, 1)
    assert TraceEvent.objects.get().status == "error"

"""Seeds 001 and 003 end to end over real HTTP against a running server (pytest-django's ``live_server``).

Each test drives a session the way an agent runtime does: create it, ask Arbiter to decide (and move),
propose moves with the state it believes the session is in, report its own model's failures. The
database is checked after each conversation: one Transition row per move, ``seq`` gap-free.
"""

from __future__ import annotations

import pytest

from agents.queue.services import queue_resolve
from agents.sessions.models import Anomaly, Session, Transition
from rules.models import DecisionRecord
from tests.support import ADDRESS_FIELDS, move_of, without_session
from tests.support.http import Agent, assert_gap_free, assert_problem, candidate, start_server


@pytest.fixture
def agents(live_server, transactional_db) -> tuple[Agent, Agent]:
    return start_server(live_server)


@pytest.fixture
def bot(agents) -> Agent:
    return agents[0]


# -- seed 001: the after-sales agent ------------------------------------------------------------


def test_after_sales_refund_conversation(bot):
    """A customer asks for a refund before saying what about; the agent clarifies, then the refund is
    reviewed and approved automatically (120 CNY is under the 500 CNY limit)."""
    started = bot.start("after_sales", "order-1001", order_id="1001")
    assert started.status == 201, started
    assert without_session(started.body) == {
        "session_id": "order-1001",
        "machine": "after_sales",
        "state": "init",
        "seq": 0,
        "allowed_transitions": ["intent_clarify", "received", "human_handoff"],
        "allowed_actions": ["verify_phone", "query_order", "orders.verify_phone", "orders.query_order"],
    }

    # Turn 1, "I want a refund": the refund rule decides refund_review, but init cannot go there; the
    # point's fallback (clarify) applies instead, and the forbidden mapping is an anomaly.
    turn1 = bot.decide("order-1001", "intent_routing", input="我要退款")
    assert turn1.status == 201, turn1
    assert (turn1.body["decision"], turn1.body["rule"]["key"]) == ("refund_review", "refund_trigger")
    assert move_of(turn1.body["session"]) == {"from": "init", "state": "intent_clarify", "seq": 1}
    assert turn1.body["feedback"] == []
    anomaly = Anomaly.objects.get(session_id="order-1001")
    assert (anomaly.code, str(anomaly.decision_id)) == ("rule_move_not_allowed", turn1.body["id"])

    # Turn 2: the model understands the clarification well enough; a general query is received.
    turn2 = bot.decide(
        "order-1001",
        "intent_routing",
        input="订单1001的耳机左边没声音",
        candidate=candidate("general_query", 0.88, "the customer describes a fault"),
    )
    assert (turn2.body["decision"], turn2.body["ruled_by"]) == ("general_query", "llm_candidate")
    assert move_of(turn2.body["session"]) == {"from": "intent_clarify", "state": "received", "seq": 2}

    # Turn 3: now the refund can be reviewed; the rule overrides the model's (whitelisted) guess.
    turn3 = bot.decide("order-1001", "intent_routing", input="那我要退款吧", candidate=candidate("general_query", 0.9))
    assert (turn3.body["decision"], turn3.body["overridden"]) == ("refund_review", True)
    assert move_of(turn3.body["session"]) == {"from": "received", "state": "refund_review", "seq": 3}

    # Turn 4: no model involved; 120 CNY is approved and the session closes.
    turn4 = bot.decide("order-1001", "refund_approval", facts={"refund_amount": 120})
    assert (turn4.body["decision"], turn4.body["ruled_by"]) == ("auto_approve", "default")
    assert move_of(turn4.body["session"]) == {"from": "refund_review", "state": "closed", "seq": 4}

    detail = bot.session("order-1001")
    assert (detail["state"], detail["seq"], detail["terminal"]) == ("closed", 4, True)
    assert (detail["allowed_transitions"], detail["interrupt_stack"]) == ([], [])
    # The refused mapping was a rule's: recorded, not counted toward the model-failure policy.
    assert detail["anomalies"] == {"count": 0, "latest": ["rule_move_not_allowed"]}
    assert detail["context"] == {"order_id": "1001"}

    rows = assert_gap_free("order-1001")
    assert [(t.kind, t.actor, str(t.decision_id)) for t in rows] == [
        ("fallback", "support_bot", turn1.body["id"]),
        ("decision", "support_bot", turn2.body["id"]),
        ("decision", "support_bot", turn3.body["id"]),
        ("decision", "support_bot", turn4.body["id"]),
    ]
    assert "fell back to 'intent_clarify'" in rows[0].reason
    assert rows[3].reason == DecisionRecord.objects.get(pk=turn4.body["id"]).reason
    assert DecisionRecord.objects.filter(session_id="order-1001").count() == 4

    # The session has ended: neither a move nor a decision with apply may touch it again.
    assert_problem(bot.move("order-1001", "escalated", "closed"), 409, "session_closed")
    closed = assert_problem(
        bot.decide("order-1001", "refund_approval", facts={"refund_amount": 1}), 409, "session_closed"
    )
    assert (closed["state"], closed["seq"]) == ("closed", 4)
    assert Transition.objects.filter(session__key="order-1001").count() == 4


def test_after_sales_large_refund_and_complaint_go_to_a_person(bot, staff_user):
    bot.start("after_sales", "order-2002")
    # A confident, whitelisted guess is accepted as it is.
    moved = bot.decide("order-2002", "intent_routing", input="这款有黑色的吗", candidate=candidate("product_info", 0.8))
    assert move_of(moved.body["session"]) == {"from": "init", "state": "received", "seq": 1}
    # A low-confidence guess is not trusted: clarify, which received cannot go to. The fallback is the
    # same forbidden state, so the session stays where it is (and the anomaly says so).
    unsure = bot.decide("order-2002", "intent_routing", input="那个怎么弄", candidate=candidate("general_query", 0.4))
    assert (unsure.body["decision"], unsure.body["rule"]["key"]) == ("intent_clarify", "low_confidence")
    assert move_of(unsure.body["session"]) == {"from": "received", "state": "received", "seq": 1}
    refund = bot.decide("order-2002", "intent_routing", input="我要退货退款")
    assert move_of(refund.body["session"]) == {"from": "received", "state": "refund_review", "seq": 2}
    # 900 CNY is above the limit: refund_approval hands the session to a person.
    big = bot.decide("order-2002", "refund_approval", facts={"refund_amount": 900})
    assert (big.body["decision"], big.body["rule"]["key"]) == ("human_handoff", "over_auto_refund_limit")
    assert move_of(big.body["session"]) == {"from": "refund_review", "state": "human_handoff", "seq": 3}
    # The customer then writes something harmless: the model may not pull the session out of the
    # human queue, neither by a decision with apply nor by the table's own edge.
    harmless = bot.decide(
        "order-2002", "intent_routing", input="你们几点下班", candidate=candidate("general_query", 0.9)
    )
    assert_problem(harmless, 409, "session_handed_off")
    assert_problem(bot.move("order-2002", "closed", "human_handoff"), 409, "session_handed_off")
    assert Session.objects.get(key="order-2002").state == "human_handoff"
    # The person closes it from the human queue.
    waiting = Session.objects.get(key="order-2002")
    closed = queue_resolve(session_pk=waiting.pk, user=staff_user, state="closed", note="refund paid by hand")
    assert (closed.state, closed.seq) == ("closed", 4)
    rows = assert_gap_free("order-2002")
    assert [t.kind for t in rows] == ["decision", "decision", "decision", "resolve"]
    assert rows[-1].reason == "refund paid by hand"


# -- seed 003: the change-address protocol ------------------------------------------------------


def test_change_address_protocol(bot):
    assert bot.start("change_address", "addr-1").body["state"] == "created"
    # An illegal jump straight to executing: refused with the allowed targets, recorded.
    jump = assert_problem(bot.move("addr-1", "executing", "created"), 422, "illegal_transition")
    assert (jump["state"], jump["seq"], jump["allowed_transitions"]) == ("created", 0, ["awaiting_intent"])
    assert jump["handed_off"] is False
    assert Anomaly.objects.get(session_id="addr-1").code == "illegal_transition"

    assert move_of(bot.move("addr-1", "awaiting_intent", "created").body) == {
        "from": "created",
        "state": "awaiting_intent",
        "seq": 1,
    }
    assert without_session(bot.act("addr-1", "identify_intent").body) == {
        "allowed": True,
        "allowed_actions": ["identify_intent"],
    }
    assert bot.move("addr-1", "collecting_params", "awaiting_intent", reason="intent change_address").status == 200

    # In collecting_params the model may ask for a missing parameter, not change the address yet.
    asked = bot.act("addr-1", "request_param", param_name="receiver_phone")
    assert (asked.status, asked.body["allowed"]) == (200, True)
    assert asked.body["allowed_actions"] == ["request_param", "cancel_intent"]
    early = assert_problem(
        bot.act("addr-1", "change_address", new_address="杭州市西湖区文三路 138 号"), 422, "action_not_allowed"
    )
    assert (early["state"], early["allowed_actions"], early["handed_off"]) == (
        "collecting_params",
        ["request_param", "cancel_intent"],
        False,
    )

    # A late event from the model still believes the session is awaiting its intent: stale.
    stale = assert_problem(bot.move("addr-1", "failed", "awaiting_intent"), 409, "state_mismatch")
    assert (stale["state"], stale["seq"]) == ("collecting_params", 2)

    # Not into executing before the parameters are held (the machine's fields, required_in executing).
    lacking = assert_problem(bot.move("addr-1", "executing", "collecting_params"), 422, "fields_missing")
    assert lacking["missing"] == ["new_address", "receiver_phone"]
    assert (lacking["state"], lacking["seq"]) == ("collecting_params", 2)
    assert bot.move("addr-1", "executing", "collecting_params", updates=ADDRESS_FIELDS).body["seq"] == 3
    assert bot.act("addr-1", "change_address", new_address="杭州市西湖区文三路 138 号").body["allowed"] is True
    assert move_of(bot.move("addr-1", "completed", "executing", reason="action_success").body) == {
        "from": "executing",
        "state": "completed",
        "seq": 4,
    }
    assert_problem(bot.move("addr-1", "awaiting_intent", "completed"), 409, "session_closed")

    detail = bot.session("addr-1")
    assert (detail["state"], detail["seq"], detail["terminal"], detail["handoff_reason"]) == (
        "completed",
        4,
        True,
        None,
    )
    assert detail["anomalies"] == {"count": 2, "latest": ["action_not_allowed", "illegal_transition"]}
    rows = assert_gap_free("addr-1")
    assert {(t.kind, t.actor) for t in rows} == {("move", "support_bot")}
    assert [t.reason for t in rows] == ["", "intent change_address", "", "action_success"]
    assert all(t.decision_id is None for t in rows)


def test_three_model_failures_hand_the_session_to_a_person(bot):
    bot.start("change_address", "addr-2")
    bot.move("addr-2", "awaiting_intent", "created")
    bot.move("addr-2", "collecting_params", "awaiting_intent")
    anomalies = "/api/v1/sessions/addr-2/anomalies"

    first = bot.post(anomalies, {"code": "invalid_json", "detail": "not JSON", "raw": "好的，用户现在的状态是…"})
    assert (first.status, first.body["handed_off"], first.body["state"]) == (201, False, "collecting_params")
    assert first.body["anomalies"] == {"count": 1, "latest": ["invalid_json"]}
    second = assert_problem(bot.move("addr-2", "completed", "collecting_params"), 422, "illegal_transition")
    assert second["handed_off"] is False
    third = bot.post(anomalies, {"code": "retries_exhausted", "detail": "3 attempts"})
    assert (third.status, third.body["handed_off"]) == (201, True)
    assert (third.body["state"], third.body["seq"], third.body["handoff_reason"]) == (
        "human_handoff",
        3,
        "model_failure",
    )
    assert third.body["anomalies"]["count"] == 3

    handoff = Transition.objects.get(session__key="addr-2", seq=3)
    assert (handoff.from_state, handoff.to_state, handoff.kind, handoff.actor) == (
        "collecting_params",
        "human_handoff",
        "model_failure",
        "system:model-failure-policy",
    )
    assert handoff.reason.startswith("model_failure: 3 anomalies")
    # More failures while a person has it are counted, but do not move it again.
    fourth = bot.post(anomalies, {"code": "invalid_json"})
    assert (fourth.body["handed_off"], fourth.body["state"], fourth.body["seq"]) == (False, "human_handoff", 3)
    assert fourth.body["anomalies"]["count"] == 4
    assert_gap_free("addr-2")


def test_three_illegal_moves_hand_the_session_to_a_person(bot):
    bot.start("change_address", "addr-3")
    bot.move("addr-3", "awaiting_intent", "created")
    for _ in range(2):
        refused = assert_problem(bot.move("addr-3", "completed", "awaiting_intent"), 422, "illegal_transition")
        assert (refused["handed_off"], refused["state"]) == (False, "awaiting_intent")
    last = assert_problem(bot.move("addr-3", "executing", "awaiting_intent"), 422, "illegal_transition")
    assert (last["handed_off"], last["state"], last["seq"]) == (True, "human_handoff", 2)
    assert last["allowed_transitions"] == ["completed", "failed"]
    session = Session.objects.get(key="addr-3")
    assert (session.state, session.handoff_reason, session.anomaly_count) == ("human_handoff", "model_failure", 3)
    # The model may not leave the human queue by an interrupt either.
    assert_problem(
        bot.post("/api/v1/sessions/addr-3/interrupt", {"to": "executing", "expected_state": "human_handoff"}),
        409,
        "session_handed_off",
    )
    assert [t.kind for t in assert_gap_free("addr-3")] == ["move", "model_failure"]
    codes = list(Anomaly.objects.filter(session_id="addr-3").order_by("created_at").values_list("code", flat=True))
    assert codes == ["illegal_transition"] * 3 + ["session_handed_off"]


def test_interrupt_two_levels_deep_and_back(bot):
    bot.start("change_address", "addr-4")
    bot.move("addr-4", "awaiting_intent", "created")
    bot.move("addr-4", "collecting_params", "awaiting_intent", updates=ADDRESS_FIELDS)  # executing requires them
    base = "/api/v1/sessions/addr-4"
    # The customer interrupts the address change with another question, then with a third one.
    one = bot.post(
        f"{base}/interrupt",
        {"to": "awaiting_intent", "expected_state": "collecting_params", "reason": "asks about logistics"},
    )
    assert move_of(one.body) == {"from": "collecting_params", "state": "awaiting_intent", "seq": 3}
    two = bot.post(
        f"{base}/interrupt", {"to": "executing", "expected_state": "awaiting_intent", "reason": "check the parcel"}
    )
    assert move_of(two.body) == {"from": "awaiting_intent", "state": "executing", "seq": 4}
    detail = bot.session("addr-4")
    assert (detail["state"], detail["interrupt_stack"]) == ("executing", ["collecting_params", "awaiting_intent"])
    # Resuming with a stale state is refused like any move.
    assert_problem(bot.post(f"{base}/resume", {"expected_state": "awaiting_intent"}), 409, "state_mismatch")

    back = bot.post(f"{base}/resume", {"expected_state": "executing"})
    assert move_of(back.body) == {"from": "executing", "state": "awaiting_intent", "seq": 5}
    assert bot.session("addr-4")["interrupt_stack"] == ["collecting_params"]
    home = bot.post(f"{base}/resume", {"expected_state": "awaiting_intent"})
    assert move_of(home.body) == {"from": "awaiting_intent", "state": "collecting_params", "seq": 6}
    detail = bot.session("addr-4")
    assert (detail["state"], detail["interrupt_stack"], detail["allowed_actions"]) == (
        "collecting_params",
        [],
        ["request_param", "cancel_intent"],
    )
    assert_problem(bot.post(f"{base}/resume", {"expected_state": "collecting_params"}), 409, "nothing_to_resume")
    rows = assert_gap_free("addr-4")
    assert [t.kind for t in rows] == ["move", "move", "interrupt", "interrupt", "resume", "resume"]
    assert [t.reason for t in rows[2:4]] == ["asks about logistics", "check the parcel"]

    # Nothing moves a session that has ended, interrupts included.
    bot.move("addr-4", "failed", "collecting_params", reason="cancel_intent")
    assert_problem(
        bot.post(f"{base}/interrupt", {"to": "awaiting_intent", "expected_state": "failed"}), 409, "session_closed"
    )
    assert_problem(bot.post(f"{base}/resume", {"expected_state": "failed"}), 409, "session_closed")


def test_idempotency_key_on_transitions(bot):
    bot.start("after_sales", "idem-1")
    first = bot.move("idem-1", "received", "init", key="turn-7")
    again = bot.move("idem-1", "received", "init", key="turn-7")
    assert first == again and move_of(first.body) == {"from": "init", "state": "received", "seq": 1}
    assert Transition.objects.filter(session__key="idem-1").count() == 1
    # The same key with another body is a client bug, not a retry.
    other = assert_problem(bot.move("idem-1", "closed", "received", key="turn-7"), 409, "idempotency_conflict")
    assert "turn-7" in other["detail"]
    # The session moves on; a late retry of the first request still gets its first move, and the session
    # object as it is now.
    assert bot.move("idem-1", "refund_review", "received", key="turn-8").body["seq"] == 2
    late = bot.move("idem-1", "received", "init", key="turn-7")
    assert move_of(late.body) == move_of(first.body)
    assert (late.body["session"]["state"], late.body["session"]["seq"]) == ("refund_review", 2)
    assert [(t.seq, t.idempotency_key) for t in assert_gap_free("idem-1")] == [(1, "turn-7"), (2, "turn-8")]
    # Keys are per agent: another session of the same agent may not reuse one.
    bot.start("after_sales", "idem-2")
    assert_problem(bot.move("idem-2", "received", "init", key="turn-7"), 409, "idempotency_conflict")
    assert bot.move("idem-2", "human_handoff", "init", key="turn-9").body["seq"] == 1


def test_seq_is_gap_free_across_every_kind_of_move(bot):
    bot.start("after_sales", "seq-1")
    answers = [
        bot.decide("seq-1", "intent_routing", input="我要退款"),  # fallback to clarify
        bot.move("seq-1", "init", "intent_clarify"),  # illegal: no seq
        bot.move("seq-1", "received", "init"),  # stale: no seq
        bot.decide("seq-1", "intent_routing", input="查询物流", candidate=candidate("general_query", 0.9)),
        bot.post("/api/v1/sessions/seq-1/interrupt", {"to": "escalated", "expected_state": "received"}),
        bot.post("/api/v1/sessions/seq-1/resume", {"expected_state": "escalated"}),
        bot.decide("seq-1", "intent_routing", input="能退款吗"),
        bot.decide("seq-1", "refund_approval", facts={"refund_amount": 499.99}),
    ]
    seqs = [(a.body.get("session") or a.body).get("seq") if a.status in (200, 201) else None for a in answers]
    assert seqs == [1, None, None, 2, 3, 4, 5, 6]
    rows = assert_gap_free("seq-1")
    assert [t.kind for t in rows] == ["fallback", "decision", "interrupt", "resume", "decision", "decision"]
    assert [r.decision_id is not None for r in rows] == [True, True, False, False, True, True]


def test_feedback_hints_after_repeated_overrides_and_anomalies(bot):
    bot.start("after_sales", "fb-1")
    complaint = {"input": "再这样我就去投诉", "candidate": candidate("general_query", 0.92)}
    once = bot.decide("fb-1", "intent_routing", apply=False, **complaint)
    assert (once.body["rule"]["key"], once.body["overridden"], once.body["feedback"]) == (
        "high_risk_keyword",
        True,
        [],
    )
    twice = bot.decide("fb-1", "intent_routing", **complaint)
    assert move_of(twice.body["session"]) == {"from": "init", "state": "human_handoff", "seq": 1}
    assert len(twice.body["feedback"]) == 1
    assert "overruled 2 times by rule high_risk_keyword" in twice.body["feedback"][0]
    assert "human_handoff" in twice.body["feedback"][0]

    # Two moves out of the human queue add a hint of their own.
    for _ in range(2):
        assert_problem(bot.move("fb-1", "received", "human_handoff"), 409, "session_handed_off")
    feedback = bot.session("fb-1")["feedback"]
    assert len(feedback) == 2
    assert any("2 moves of a session a person has" in hint for hint in feedback)
    # The hints are per session.
    bot.start("after_sales", "fb-2")
    assert bot.session("fb-2")["feedback"] == []


def test_another_agent_cannot_see_or_move_the_session(agents):
    bot, other = agents
    bot.start("after_sales", "private-1")
    base = "/api/v1/sessions/private-1"
    attempts = [
        other.get(base),
        other.move("private-1", "received", "init"),
        other.act("private-1", "anything"),
        other.post(f"{base}/interrupt", {"to": "received", "expected_state": "init"}),
        other.post(f"{base}/resume", {"expected_state": "init"}),
        other.post(f"{base}/anomalies", {"code": "invalid_json"}),
        other.decide("private-1", "intent_routing", input="我要投诉"),
    ]
    for answer in attempts:
        assert_problem(answer, 404, "unknown_session")
    session = Session.objects.get(key="private-1")
    assert (session.state, session.seq, session.anomaly_count) == ("init", 0, 0)
    assert not Anomaly.objects.exists() and not Transition.objects.exists()
    # Session ids are the agent's own: the other agent may use the same one for its own session.
    assert other.start("after_sales", "private-1").status == 201
    assert bot.start("after_sales", "private-1").code == "session_exists"
    # A token that is not an agent's gets nothing at all.
    stranger = Agent(bot.url, "not-a-token", "stranger")
    assert_problem(stranger.get(base), 401, "not_authenticated")

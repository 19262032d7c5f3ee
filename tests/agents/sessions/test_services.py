"""The session services against the real database: the policies the API relies on, one at a time."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from agents.errors import (
    ActionNotAllowed,
    IllegalTransition,
    MachineMismatch,
    NothingToResume,
    SessionClosed,
    SessionExists,
    SessionHandedOff,
    StateMismatch,
    UnknownMachine,
    UnknownSession,
)
from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create
from agents.sessions import decide as decisions_module
from agents.sessions.codes import SYSTEM_MODEL_FAILURE
from agents.sessions.decide import decision_make
from agents.sessions.feedback import FeedbackBasis, session_feedback
from agents.sessions.interrupts import session_interrupt, session_report_anomaly, session_resume
from agents.sessions.models import Anomaly, Session, Transition
from agents.sessions.reads import session_read
from agents.sessions.services import (
    session_action,
    session_create,
    session_move,
    session_transition,
)
from rules.config.machines import machine_save
from rules.config.yaml_import import config_import
from rules.decisions.compute import DecideRequest
from rules.engine import Candidate
from rules.errors import InvalidRequest
from rules.models import CandidateRequestCount, DecisionRecord, RuledBy, StateMachine
from tests.support import DEMO, UNDER_REVIEW_RULE, approved

pytestmark = pytest.mark.django_db


def demo_document() -> dict[str, Any]:
    return yaml.safe_load(DEMO.read_text(encoding="utf-8"))


def import_document(document: dict[str, Any]) -> None:
    """Import ``document``; a high-risk change goes through approval by a second person."""
    text = yaml.safe_dump(document, allow_unicode=True)
    approved(lambda: config_import(text=text, source="test", actor=None, reason="test"))


def point_of(document: dict[str, Any], key: str) -> dict[str, Any]:
    return next(p for p in document["points"] if p["key"] == key)


@pytest.fixture
def agent(db) -> AgentRuntime:
    import_document(demo_document())
    bot, _ = agent_create(name="support_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="t")
    return bot


def start(agent: AgentRuntime, key: str, machine: str = "change_address", *path: str) -> Session:
    session = session_create(agent=agent, machine_key=machine, session_id=key)
    here = session.state
    for there in path:
        session_transition(agent=agent, session_id=key, to=there, expected_state=here)
        here = there
    return Session.objects.get(pk=session.pk)


def plain(extra: dict) -> dict:
    """A refusal's extension members without the session object (tests/api check that)."""
    return {k: v for k, v in extra.items() if k != "session"}


def report(agent: AgentRuntime, key: str, code: str = "invalid_json") -> bool:
    """Whether the reported anomaly handed the session off."""
    return session_report_anomaly(agent=agent, session_id=key, code=code, detail="test").handed_off


def cand(decision: str, confidence: float) -> Candidate:
    return Candidate(decision, confidence, "model")


def decide(agent: AgentRuntime, key: str = "", *, point: str = "intent_routing", apply: bool = True, **body: Any):
    return decision_make(agent=agent, request=DecideRequest(point=point, session_id=key, **body), apply=apply)


def transitions(key: str) -> list[tuple[int, str, str, str]]:
    return list(
        Transition.objects.filter(session__key=key).order_by("seq").values_list("seq", "from_state", "to_state", "kind")
    )


# -- creating ------------------------------------------------------------------------------------


def test_create_starts_in_the_initial_state(agent):
    session = session_create(agent=agent, machine_key="after_sales", context={"order_id": "7"})
    assert (session.state, session.seq, session.stack, session.context) == ("init", 0, [], {"order_id": "7"})
    assert len(session.key) == 32  # generated when the agent gives none
    with pytest.raises(UnknownMachine):
        session_create(agent=agent, machine_key="nope")
    session_create(agent=agent, machine_key="after_sales", session_id="mine")
    with pytest.raises(SessionExists):
        session_create(agent=agent, machine_key="change_address", session_id="mine")
    assert not Transition.objects.exists()


# -- the model-failure policy --------------------------------------------------------------------


def test_the_policy_hands_off_at_exactly_max_anomalies(agent):
    start(agent, "s", "change_address", "awaiting_intent", "collecting_params")
    assert report(agent, "s") is False
    with pytest.raises(ActionNotAllowed):
        session_action(agent=agent, session_id="s", action="change_address")
    session = Session.objects.get(key="s")
    assert (session.state, session.anomaly_count, session.seq) == ("collecting_params", 2, 2)

    assert report(agent, "s", "retries_exhausted") is True
    assert Transition.objects.get(session__key="s", seq=3).kind == "model_failure"
    session = Session.objects.get(key="s")
    assert (session.state, session.anomaly_count, session.handoff_reason) == ("human_handoff", 3, "model_failure")
    row = Transition.objects.get(session=session, seq=3)
    assert (row.actor, row.kind) == (SYSTEM_MODEL_FAILURE, "model_failure")
    assert row.reason == "model_failure: 3 anomalies (latest retries_exhausted)"


def test_a_machine_with_max_anomalies_one_hands_off_at_the_first(agent):
    machine = StateMachine.objects.get(key="change_address")
    machine.max_anomalies = 1
    approved(lambda: machine_save(machine=machine, actor=None, reason="strict"))
    start(agent, "s", "change_address", "awaiting_intent")
    with pytest.raises(IllegalTransition) as refused:
        session_transition(agent=agent, session_id="s", to="completed", expected_state="awaiting_intent")
    assert plain(refused.value.extra)["handed_off"] is True
    assert plain(refused.value.extra)["state"] == "human_handoff"
    assert transitions("s") == [
        (1, "created", "awaiting_intent", "move"),
        (2, "awaiting_intent", "human_handoff", "model_failure"),
    ]


@pytest.mark.parametrize(
    "path",
    [
        ["awaiting_intent", "human_handoff"],  # already with a person
        ["awaiting_intent", "failed"],  # ended
    ],
)
def test_anomalies_in_a_handoff_or_terminal_state_do_not_move_it_again(agent, path):
    start(agent, "s", "change_address", *path)
    for n in range(1, 6):
        assert report(agent, "s") is False
        assert Session.objects.get(key="s").anomaly_count == n
    with pytest.raises(ActionNotAllowed) as refused:
        session_action(agent=agent, session_id="s", action="change_address")
    assert plain(refused.value.extra)["handed_off"] is False
    assert Session.objects.get(key="s").anomaly_count == 6
    assert Session.objects.get(key="s").seq == 2
    assert len(transitions("s")) == 2


def test_a_session_handed_off_by_the_policy_is_counted_once(agent):
    start(agent, "s", "change_address", "awaiting_intent")
    for _ in range(3):
        report(agent, "s")
    for _ in range(3):
        report(agent, "s")
    assert [t[3] for t in transitions("s")] == ["move", "model_failure"]


# -- interrupts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("to", "why"),
    [("completed", "terminal"), ("collecting_params", "the same state"), ("nowhere", "not a state")],
)
def test_interrupt_validation(agent, to, why):
    start(agent, "s", "change_address", "awaiting_intent", "collecting_params")
    with pytest.raises(IllegalTransition) as refused:
        session_interrupt(agent=agent, session_id="s", to=to, expected_state="collecting_params")
    assert refused.value.code == "illegal_transition" and refused.value.status == 422, why
    assert f"'{to}'" in refused.value.detail
    session = Session.objects.get(key="s")
    assert (session.state, session.seq, session.stack) == ("collecting_params", 2, [])


def test_interrupt_needs_the_expected_state_and_a_live_session(agent):
    start(agent, "s", "change_address", "awaiting_intent")
    with pytest.raises(StateMismatch) as stale:
        session_interrupt(agent=agent, session_id="s", to="collecting_params", expected_state="created")
    assert plain(stale.value.extra) == {"state": "awaiting_intent", "seq": 1}
    start(agent, "t", "change_address", "awaiting_intent", "failed")
    with pytest.raises(SessionClosed):
        session_interrupt(agent=agent, session_id="t", to="awaiting_intent", expected_state="failed")
    with pytest.raises(UnknownSession):
        session_interrupt(agent=agent, session_id="nope", to="awaiting_intent", expected_state="created")


def test_interrupts_nest_and_resume_in_reverse_order(agent):
    start(agent, "s", "after_sales", "received")
    session_interrupt(agent=agent, session_id="s", to="intent_clarify", expected_state="received")
    session_interrupt(agent=agent, session_id="s", to="escalated", expected_state="intent_clarify")
    assert Session.objects.get(key="s").stack == ["received", "intent_clarify"]
    assert session_resume(agent=agent, session_id="s", expected_state="escalated").state == "intent_clarify"
    assert session_resume(agent=agent, session_id="s", expected_state="intent_clarify").state == "received"
    with pytest.raises(NothingToResume) as empty:
        session_resume(agent=agent, session_id="s", expected_state="received")
    assert (empty.value.code, empty.value.status, plain(empty.value.extra)) == (
        "nothing_to_resume",
        409,
        {"state": "received", "seq": 5},
    )
    assert [t[3] for t in transitions("s")] == ["move", "interrupt", "interrupt", "resume", "resume"]


def test_resume_with_an_empty_stack(agent):
    start(agent, "s", "after_sales")
    with pytest.raises(NothingToResume):
        session_resume(agent=agent, session_id="s", expected_state="init")
    assert Session.objects.get(key="s").seq == 0


def test_the_model_cannot_interrupt_resume_or_move_its_way_out_of_a_policy_handoff(agent):
    start(agent, "s", "change_address", "awaiting_intent", "collecting_params")
    session_interrupt(agent=agent, session_id="s", to="awaiting_intent", expected_state="collecting_params")
    for _ in range(3):
        report(agent, "s")
    session = Session.objects.get(key="s")
    assert (session.state, session.stack) == ("human_handoff", ["collecting_params"])
    with pytest.raises(SessionHandedOff) as refused:
        session_resume(agent=agent, session_id="s", expected_state="human_handoff")
    assert plain(refused.value.extra) == {"state": "human_handoff", "seq": 4, "handoff_reason": "model_failure"}
    with pytest.raises(SessionHandedOff):
        session_interrupt(agent=agent, session_id="s", to="executing", expected_state="human_handoff")
    # Not even the machine's own way out: that is the person's (agents.queue.services).
    with pytest.raises(SessionHandedOff):
        session_transition(agent=agent, session_id="s", to="completed", expected_state="human_handoff")
    assert Session.objects.get(key="s").seq == 4


def test_a_handoff_by_interrupt_is_the_persons_too(agent):
    """Interrupting into the handoff state on purpose (the customer asked for a person) hands the
    conversation over like any other way in: the agent may not resume out of it."""
    start(agent, "s", "change_address", "awaiting_intent")
    session_interrupt(agent=agent, session_id="s", to="human_handoff", expected_state="awaiting_intent")
    assert Session.objects.get(key="s").handoff_reason == "agent"
    with pytest.raises(SessionHandedOff):
        session_resume(agent=agent, session_id="s", expected_state="human_handoff")
    assert Session.objects.get(key="s").state == "human_handoff"


# -- transitions ---------------------------------------------------------------------------------


def test_a_move_may_cite_only_its_own_decisions(agent):
    start(agent, "s", "after_sales")
    mine = decide(agent, "s", point="refund_approval", apply=False, facts={"refund_amount": 1}).record
    start(agent, "t", "after_sales")
    elsewhere = decide(agent, "t", point="refund_approval", apply=False, facts={"refund_amount": 2}).record
    no_session = decide(agent, "", point="refund_approval", apply=False, facts={"refund_amount": 3}).record
    other, _ = agent_create(name="other_bot", point_keys=["refund_approval"], actor=None, reason="t")
    start(other, "s", "after_sales")  # its own session of the same name
    theirs = decide(other, "s", point="refund_approval", apply=False, facts={"refund_amount": 4}).record
    for foreign in (elsewhere, theirs):
        with pytest.raises(InvalidRequest) as refused:
            session_transition(
                agent=agent, session_id="s", to="received", expected_state="init", decision_id=foreign.pk
            )
        assert "decision_id" in refused.value.errors
    assert session_transition(agent=agent, session_id="s", to="received", expected_state="init", decision_id=mine.pk)
    assert session_transition(
        agent=agent, session_id="s", to="refund_review", expected_state="received", decision_id=no_session.pk
    )
    assert list(Transition.objects.order_by("seq").values_list("decision_id", flat=True)) == [mine.pk, no_session.pk]


def test_a_stale_writer_cannot_overwrite_a_move(agent):
    """The compare-and-set on seq, without any lock: a second writer holding an old copy loses."""
    start(agent, "s", "after_sales")
    stale = Session.objects.select_related("machine").get(key="s")
    session_transition(agent=agent, session_id="s", to="received", expected_state="init")
    with pytest.raises(StateMismatch) as lost:
        session_move(stale, to="human_handoff", kind="move", actor="racer")
    assert plain(lost.value.extra) == {"state": "received", "seq": 1}
    assert transitions("s") == [(1, "init", "received", "move")]


def test_an_illegal_move_is_refused_and_recorded(agent):
    start(agent, "s", "after_sales")
    with pytest.raises(IllegalTransition) as refused:
        session_transition(agent=agent, session_id="s", to="closed", expected_state="init")
    assert plain(refused.value.extra)["allowed_transitions"] == ["intent_clarify", "received", "human_handoff"]
    anomaly = Anomaly.objects.get()
    assert (anomaly.code, anomaly.session_id, anomaly.agent) == ("illegal_transition", "s", agent)
    assert "'init' → 'closed' is not allowed" in anomaly.detail
    assert Session.objects.get(key="s").anomaly_count == 1


# -- deciding and moving in one step -------------------------------------------------------------


def test_decide_with_apply_refusals(agent):
    with pytest.raises(UnknownSession):
        decide(agent, "nope", input="我要退款")
    with pytest.raises(InvalidRequest):
        decide(agent, "", input="我要退款")
    start(agent, "closed-one", "after_sales", "received", "closed")
    with pytest.raises(SessionClosed) as closed:
        decide(agent, "closed-one", input="我要退款")
    assert plain(closed.value.extra) == {"state": "closed", "seq": 2}
    start(agent, "address", "change_address")
    with pytest.raises(MachineMismatch) as mismatch:
        decide(agent, "address", input="我要退款")
    assert (mismatch.value.code, mismatch.value.status) == ("machine_mismatch", 422)
    assert "after_sales" in mismatch.value.detail and "change_address" in mismatch.value.detail
    assert not DecisionRecord.objects.exists()  # a refused request decides nothing and logs nothing
    assert Session.objects.get(key="address").seq == 0
    # Without apply the same requests are plain decisions (logged, nothing moves).
    assert decide(agent, "address", apply=False, input="我要退款").record is not None
    assert Session.objects.get(key="address").seq == 0


def test_an_unmapped_outcome_leaves_the_session_where_it_is(agent):
    document = demo_document()
    del point_of(document, "intent_routing")["state_map"]["general_query"]
    import_document(document)
    start(agent, "s", "after_sales")
    result = decide(agent, "s", input="你们几点下班", candidate=cand("general_query", 0.9))
    assert (result.decision.decision, result.session_move) == (
        "general_query",
        {"from": "init", "state": "init", "seq": 0},
    )
    assert result.record is not None and result.record.session_move == result.session_move
    assert not Transition.objects.exists() and not Anomaly.objects.exists()


def test_an_outcome_mapped_to_the_current_state_is_no_move(agent):
    start(agent, "s", "after_sales", "received")
    result = decide(agent, "s", input="查物流", candidate=cand("general_query", 0.9))
    assert result.session_move == {"from": "received", "state": "received", "seq": 1}
    assert len(transitions("s")) == 1 and not Anomaly.objects.exists()


def test_needs_candidate_with_apply_does_not_move(agent):
    start(agent, "s", "after_sales")
    result = decide(agent, "s", input="你好")
    assert result.decision.needs_candidate and result.record is None
    assert result.session_move == {"from": "init", "state": "init", "seq": 0}
    assert not DecisionRecord.objects.exists() and not Transition.objects.exists()
    assert CandidateRequestCount.objects.get().count == 1


def test_the_fallback_is_taken_only_where_the_machine_allows_it(agent):
    start(agent, "s", "after_sales")
    fell_back = decide(agent, "s", input="我要退款")
    assert fell_back.session_move == {"from": "init", "state": "intent_clarify", "seq": 1}
    # From intent_clarify, refund_review is still not allowed and the fallback is where it already is.
    stays = decide(agent, "s", input="退款")
    assert stays.session_move == {"from": "intent_clarify", "state": "intent_clarify", "seq": 1}
    assert decide(agent, "s", input="查物流", candidate=cand("general_query", 0.9)).session_move["state"] == "received"
    # received → intent_clarify is not an edge: a low-confidence guess cannot move it back there.
    Session.objects.filter(key="s").update(anomaly_count=0)  # two so far; the third would hand it off
    unsure = decide(agent, "s", input="嗯", candidate=cand("general_query", 0.3))
    assert (unsure.decision.decision, unsure.session_move) == (
        "intent_clarify",
        {"from": "received", "state": "received", "seq": 2},
    )
    latest = Anomaly.objects.filter(session_id="s").order_by("-created_at", "-pk").first()
    assert latest is not None and "stayed in 'received'" in latest.detail
    assert [t[3] for t in transitions("s")] == ["fallback", "decision"]


def test_a_decision_anomaly_that_hands_off_reports_the_whole_move(agent):
    start(agent, "s", "after_sales", "received")
    Session.objects.filter(key="s").update(anomaly_count=2)
    # Raw model output that is not a candidate: an anomaly, the third; the policy hands the session off.
    result = decide(agent, "s", input="这个怎么用", candidate_raw="I think general_query")
    assert result.session_move == {"from": "received", "state": "human_handoff", "seq": 2}
    assert transitions("s")[-1] == (2, "received", "human_handoff", "model_failure")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("text", "candidate", "anomalies"),
    [("你们几点下班", {"decision": "general_query", "confidence": 0.9}, 0), ("我要退款", None, 1)],
    ids=["mapped move", "fallback move"],
)
def test_decision_move_and_log_commit_together_or_not_at_all(agent, monkeypatch, text, candidate, anomalies):
    start(agent, "s", "after_sales")
    calls: list[str] = []

    def move_then_fail(session, **kwargs):
        session_move(session, **kwargs)  # the move and its row are written ...
        calls.append(kwargs["kind"])
        assert DecisionRecord.objects.count() == 1 and Anomaly.objects.count() == anomalies
        raise RuntimeError("the database went away")  # ... and then something fails

    monkeypatch.setattr(decisions_module, "session_move", move_then_fail)
    with pytest.raises(RuntimeError):
        decide(agent, "s", input=text, candidate=cand(**candidate) if candidate else None)
    assert calls == ["decision" if candidate else "fallback"]
    assert not DecisionRecord.objects.exists()
    assert not Transition.objects.exists()
    assert not Anomaly.objects.exists()
    session = Session.objects.get(key="s")
    assert (session.state, session.seq, session.anomaly_count) == ("init", 0, 0)


def test_session_state_conditions_see_the_sessions_state(agent):
    document = demo_document()
    point_of(document, "intent_routing")["rules"].append(dict(UNDER_REVIEW_RULE))
    import_document(document)
    start(agent, "review", "after_sales", "received", "refund_review")
    start(agent, "fresh", "after_sales", "received")
    guess = cand("general_query", 0.9)
    in_review = decide(agent, "review", apply=False, input="你们几点下班", candidate=guess)
    assert (in_review.decision.decision, in_review.decision.rule.key) == ("human_handoff", "under_review")
    assert (
        decide(agent, "fresh", apply=False, input="你们几点下班", candidate=guess).decision.decision == "general_query"
    )
    # No session, no session state: the condition cannot match.
    assert decide(agent, "", apply=False, input="你们几点下班", candidate=guess).decision.decision == "general_query"
    # A session id the agent has not created is refused: not decided as if there were no session.
    with pytest.raises(UnknownSession):
        decide(agent, "unknown", apply=False, input="你们几点下班", candidate=guess)
    moved = decide(agent, "review", input="你们几点下班", candidate=guess)
    assert moved.session_move == {"from": "refund_review", "state": "human_handoff", "seq": 3}
    assert DecisionRecord.objects.get(pk=moved.record.pk).rule_key == "under_review"


# -- feedback ------------------------------------------------------------------------------------


def test_feedback_needs_the_same_mistake_twice(agent):
    start(agent, "s", "after_sales")
    session = Session.objects.get(key="s")
    assert session_feedback(session) == []
    report(agent, "s", "invalid_candidate_output")
    report(agent, "s", "schema_violation")
    assert session_feedback(session) == []
    report(agent, "s", "schema_violation")
    (hint,) = session_feedback(Session.objects.get(key="s"))
    assert hint == "2 anomalies 'schema_violation' in this session."


def test_feedback_after_two_overrides_by_the_same_rule(agent):
    start(agent, "s", "after_sales")
    for text in ("我要投诉", "我去12315投诉你们"):
        result = decide(agent, "s", apply=False, input=text, candidate=cand("general_query", 0.95))
        assert (result.decision.rule.key, result.decision.overridden) == ("high_risk_keyword", True)
    (hint,) = session_feedback(Session.objects.get(key="s"))
    assert "overruled 2 times by rule high_risk_keyword" in hint
    # Hints are per session.
    assert session_feedback(start(agent, "t", "after_sales")) == []


def test_the_feedback_query_names_the_models_tables():
    from rules.decisions import statements

    # The hints' rows are read by SQL written by hand (one statement on the decide path), its names taken
    # from the models' metadata: a table renamed in a migration is renamed there too.
    pg = statements.session_select(session=Session, anomaly=Anomaly, lock=False, with_feedback=True)
    rows = statements.feedback_rows(anomaly=Anomaly)
    # Written out for the partial index's predicate (rules.decisions.models), which names the same value.
    for sql in (rows, pg):
        assert f"ruled_by = '{RuledBy.HARD_RULE.value}'" in sql
        assert f"FROM {Anomaly._meta.db_table} " in sql
        assert f"FROM {DecisionRecord._meta.db_table} " in sql


def test_feedback_counts_only_the_latest_anomalies(agent):
    start(agent, "s", "after_sales")
    for code in ("schema_violation", "schema_violation", "invalid_candidate_output", "invalid_candidate_output"):
        report(agent, "s", code)
    session = Session.objects.get(key="s")
    # The two latest are the two invalid outputs: the older schema violations fall outside the window.
    assert session_feedback(session, limit=2) == [
        hint for hint in session_feedback(session) if "schema_violation" not in hint
    ]
    assert len(session_feedback(session)) == 2


# Overruled by three different rules, accepted, and with a candidate that is no outcome (an anomaly).
TURNS = {
    "complaint": {"input": "我要投诉", "candidate": cand("general_query", 0.95)},
    "refund": {"input": "我要退款", "candidate": cand("general_query", 0.95)},
    "unsure": {"input": "where is my parcel", "candidate": cand("general_query", 0.2)},
    "accepted": {"input": "where is my parcel", "candidate": cand("general_query", 0.95)},
    "not_an_outcome": {"input": "where is my parcel", "candidate": cand("no_such_outcome", 0.95)},
}
SEQUENCE = [
    "complaint", "refund", "complaint", "accepted", "unsure", "unsure", "refund", "not_an_outcome",
    "complaint", "not_an_outcome", "refund", "accepted", "unsure", "complaint", "complaint", "refund",
]  # fmt: skip


def test_feedback_read_before_a_decision_gives_the_hints_after_it(agent):
    """A decide that does not move its session reads the feedback's basis with the session, before its
    row is logged: the hints it answers with are those read after the row, window edges included."""
    start(agent, "s", "after_sales")
    for i, turn in enumerate(SEQUENCE):
        before = {limit: session_read(agent_id=agent.pk, key="s", limit=limit) for limit in (2, 3)}
        result = decide(agent, "s", apply=False, **TURNS[turn])
        record = DecisionRecord.objects.get(pk=result.record.pk)
        for limit, (session, basis) in before.items():
            assert session is not None and basis.limit == limit
            after = session_feedback(Session.objects.get(key="s"), limit=limit)
            if turn != "not_an_outcome":  # an anomaly: the decide took the lock and counted after its row
                assert basis.hints(then=record) == after, (i, turn, limit)
        assert result.feedback == session_feedback(Session.objects.get(key="s")), (i, turn)
    hints = session_feedback(Session.objects.get(key="s"))
    assert any("high_risk_keyword" in h for h in hints) and any("refund_trigger" in h for h in hints)
    assert any("candidate_not_an_outcome" in h or "not outcomes" in h for h in hints)


def test_a_session_read_without_the_session(agent):
    assert session_read(agent_id=agent.pk, key="nobody") == (None, FeedbackBasis())


def test_the_hints_at_the_window_edge(agent):
    """Counted by hand: with a window of two, a second refund pushes the last complaint out."""
    start(agent, "s", "after_sales")
    for turn in ("complaint", "complaint", "refund"):
        decide(agent, "s", apply=False, **TURNS[turn])
    _, basis = session_read(agent_id=agent.pk, key="s", limit=2)
    assert basis.overruled == (("refund_trigger", "refund_review"), ("high_risk_keyword", "human_handoff"))
    assert basis.hints() == []  # one of each in the window
    result = decide(agent, "s", apply=False, **TURNS["refund"])
    assert basis.hints(then=DecisionRecord.objects.get(pk=result.record.pk)) == [
        "Your candidate was overruled 2 times by rule refund_trigger, which decided refund_review: "
        "messages like these are not yours to settle."
    ]

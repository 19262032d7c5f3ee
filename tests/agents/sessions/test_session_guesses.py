"""A decide that does not move its session, decided in the state this process last saw the session in.

On PostgreSQL one statement reads the session and inserts the log row only if the session is still in
that state (``session_log_if_state``); a wrong guess logs nothing, and the decide is made again in the
state the statement returned. What must hold whatever the guess: the rules see the session's committed
state, the row records it, exactly one row is logged, and the hints are what a read after the row gives.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml
from django.db import DataError, NotSupportedError, connection
from django.db.models import F
from django.utils import timezone
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agents.errors import UnknownSession
from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create
from agents.sessions import reads as sessions_module
from agents.sessions.decide import decision_make
from agents.sessions.feedback import session_feedback
from agents.sessions.models import Session
from agents.sessions.reads import session_log_if_state, session_state_seen, sessions_seen_forget
from agents.sessions.services import session_create, session_transition
from rules.config.yaml_import import config_import
from rules.decisions.compute import DecideRequest, decision_prepare
from rules.decisions.decide import decision_evaluate, point_current
from rules.engine import Candidate
from rules.models import CandidateRequestCount, DecisionRecord
from tests.support import DEMO, UNDER_REVIEW_RULE

pytestmark = pytest.mark.django_db

GUESS = Candidate("general_query", 0.9, "model")
INPUTS = ("你们几点下班", "我要投诉你们", "where is my parcel")
STATES = ("init", "received", "refund_review", "intent_clarify", "escalated")


@pytest.fixture
def agent(db) -> AgentRuntime:
    document = yaml.safe_load(DEMO.read_text(encoding="utf-8"))
    point = next(p for p in document["points"] if p["key"] == "intent_routing")
    point["rules"].append(dict(UNDER_REVIEW_RULE))
    config_import(text=yaml.safe_dump(document, allow_unicode=True), source="test", actor=None, reason="test")
    bot, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    return bot


def decide(
    agent: AgentRuntime, key: str, text: str = "你们几点下班", candidate: Candidate | None = GUESS, now: Any = None
) -> Any:
    return decision_make(
        agent=agent,
        request=DecideRequest(point="intent_routing", session_id=key, input=text, candidate=candidate),
        now=now,
    )


def expected(
    agent: AgentRuntime, state: str | None, text: str, candidate: Candidate | None, now: Any
) -> tuple[str, str, str]:
    """What the rules answer in ``state``: evaluated apart, from the state read by the test, counting nothing."""
    point, revision = point_current(point_key="intent_routing")
    request = DecideRequest(point="intent_routing", input=text, candidate=candidate)
    evaluated = decision_evaluate(
        agent_id=agent.pk,
        agent_name=agent.name,
        point=point,
        revision=revision,
        request=request,
        prepared=decision_prepare(point=point, request=request),
        session_state=state,
        now=now,
        idempotency_key="",
        digest="",
        save=False,
        count=False,
    )
    d = evaluated.decision
    return d.decision or "", d.ruled_by or "", d.rule.key if d.rule else ""


def asked() -> int:
    return sum(CandidateRequestCount.objects.values_list("count", flat=True))


def committed_state(agent: AgentRuntime, key: str) -> str | None:
    return Session.objects.filter(agent=agent, key=key).values_list("state", flat=True).first()


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite keeps no guesses (no writable CTEs): it reads every time"
)


@postgresql_only
def test_a_wrong_guess_decides_again_in_the_committed_state(agent):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    session_transition(agent=agent, session_id="s1", to="received", expected_state="init")
    first = decide(agent, "s1")
    assert first.decision.decision == "general_query"
    assert session_state_seen(agent_id=agent.pk, key="s1") == "received"
    # Another worker moves the session (written as its move commits it): this process still guesses "received".
    Session.objects.filter(key="s1").update(state="refund_review", seq=F("seq") + 1)
    second = decide(agent, "s1")
    assert (second.decision.decision, second.decision.rule.key) == ("human_handoff", "under_review")
    assert DecisionRecord.objects.filter(session_id="s1").count() == 2  # nothing logged by the wrong guess
    assert DecisionRecord.objects.get(pk=second.record.pk).session_state == "refund_review"
    assert session_state_seen(agent_id=agent.pk, key="s1") == "refund_review"


@postgresql_only
def test_a_move_made_here_becomes_the_guess_once_committed(agent, django_capture_on_commit_callbacks):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    decide(agent, "s1")
    with django_capture_on_commit_callbacks(execute=True):
        session_transition(agent=agent, session_id="s1", to="received", expected_state="init")
        assert session_state_seen(agent_id=agent.pk, key="s1") == "init"  # not before it commits
    assert session_state_seen(agent_id=agent.pk, key="s1") == "received"


@postgresql_only
def test_a_session_gone_since_it_was_seen_is_no_session(agent):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    session_transition(agent=agent, session_id="s1", to="received", expected_state="init")
    session_transition(agent=agent, session_id="s1", to="refund_review", expected_state="received")
    assert decide(agent, "s1").decision.decision == "human_handoff"
    Session.objects.filter(key="s1").delete()
    rows = DecisionRecord.objects.count()
    # The guess is checked by the statement that would log: it finds no session, logs nothing, and the
    # decide is refused as for any id this agent has no session with.
    with pytest.raises(UnknownSession):
        decide(agent, "s1")
    assert DecisionRecord.objects.count() == rows
    assert session_state_seen(agent_id=agent.pk, key="s1") is None


@postgresql_only
def test_the_guesses_are_bounded_and_the_one_seen_longest_ago_goes_first(agent, monkeypatch):
    monkeypatch.setattr(sessions_module, "SEEN_STATES_MAX", 2)
    for key in ("a", "b", "c"):
        session_create(agent=agent, machine_key="after_sales", session_id=key)
    for key in ("a", "b", "a", "c"):  # "a" seen again after "b": "b" is the one seen longest ago
        decide(agent, key)
    assert [session_state_seen(agent_id=agent.pk, key=k) for k in ("a", "b", "c")] == ["init", None, "init"]


@pytest.mark.skipif(connection.vendor == "postgresql", reason="what SQLite does instead; PostgreSQL's tests are above")
def test_sqlite_never_guesses(agent):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    first = decide(agent, "s1")
    sessions_module.session_seen(agent.pk, "s1", "init")  # even a guess left there is not used
    assert session_state_seen(agent_id=agent.pk, key="s1") is None
    with pytest.raises(NotSupportedError):
        session_log_if_state(agent_id=agent.pk, key="s1", state="init", record=first.record)


@postgresql_only
def test_the_folded_insert_refuses_a_value_too_long_as_a_plain_insert_does(agent):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    record = decide(agent, "s1").record
    record.pk = uuid.uuid4()
    record.decision = "x" * 65  # the column is varchar(64): a cast to varchar(64) would cut it silently
    with pytest.raises(DataError):
        session_log_if_state(agent_id=agent.pk, key="s1", state="init", record=record)


steps = st.lists(
    st.one_of(
        # Without a candidate, the point asks for one unless a rule decides: in refund_review, the state's own.
        st.tuples(st.just("decide"), st.integers(0, 2), st.sampled_from(INPUTS), st.sampled_from([GUESS, None])),
        st.tuples(st.just("elsewhere"), st.integers(0, 2), st.sampled_from(STATES)),
        st.tuples(st.just("delete"), st.integers(0, 2)),
        st.tuples(
            st.just("forget"),
        ),
    ),
    min_size=1,
    max_size=25,
)


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
# A guess made wrong behind the process's back, always tried (the draws need not find it).
@example(steps=[("decide", 0, INPUTS[0], GUESS), ("elsewhere", 0, "refund_review"), ("decide", 0, INPUTS[0], GUESS)])
# Guessed in a state where a rule decides, committed in one where the point asks for a candidate, and back.
@example(
    steps=[
        ("elsewhere", 0, "refund_review"),
        ("decide", 0, INPUTS[0], None),
        ("elsewhere", 0, "received"),
        ("decide", 0, INPUTS[0], None),
        ("elsewhere", 0, "refund_review"),
        ("decide", 0, INPUTS[0], None),
    ]
)
# A guess of a session deleted since, by a decide that asks for a candidate (it logs nothing to check by).
@example(steps=[("decide", 0, INPUTS[0], GUESS), ("delete", 0), ("decide", 0, INPUTS[0], None)])
def test_whatever_was_guessed_the_rules_see_the_committed_state_and_one_row_is_logged(agent, steps):
    """Sessions moved and deleted behind the process's back (``elsewhere``: the state written as another
    worker's move would commit it), guesses forgotten as a restarted worker forgets them, decides in
    between: each decide answers as the rules do in the state committed at that moment, logs exactly one
    row recording that state, and returns the hints a read right after its row gives."""
    run = uuid.uuid4().hex[:8]
    keys = [f"{run}-{i}" for i in range(3)]
    for key in keys:
        session_create(agent=agent, machine_key="after_sales", session_id=key)
    for step in steps:
        if step[0] == "forget":
            sessions_seen_forget()
        elif step[0] == "elsewhere":
            Session.objects.filter(agent=agent, key=keys[step[1]]).update(state=step[2])
        elif step[0] == "delete":
            Session.objects.filter(agent=agent, key=keys[step[1]]).delete()
        else:
            key, text, candidate = keys[step[1]], step[2], step[3]
            state = committed_state(agent, key)
            if state is None:  # deleted: a decide naming it is refused, guess or no guess, and logs nothing
                rows = DecisionRecord.objects.count()
                with pytest.raises(UnknownSession):
                    decide(agent, key, text, candidate, timezone.now())
                assert DecisionRecord.objects.count() == rows
                continue
            rows, asks = DecisionRecord.objects.filter(session_id=key).count(), asked()
            now = timezone.now()
            answer = decide(agent, key, text, candidate, now)
            d = answer.decision
            assert (d.decision or "", d.ruled_by or "", d.rule.key if d.rule else "") == expected(
                agent, state, text, candidate, now
            )
            if connection.vendor == "postgresql":  # the guess follows what the decide saw
                assert session_state_seen(agent_id=agent.pk, key=key) == state
            if d.needs_candidate:  # counted once, whatever was guessed; nothing logged
                assert (DecisionRecord.objects.filter(session_id=key).count(), asked()) == (rows, asks + 1)
            else:
                assert (DecisionRecord.objects.filter(session_id=key).count(), asked()) == (rows + 1, asks)
                assert DecisionRecord.objects.get(pk=answer.record.pk).session_state == (state or "")
            session = Session.objects.filter(agent=agent, key=key).first()
            assert answer.feedback == (session_feedback(session) if session else [])

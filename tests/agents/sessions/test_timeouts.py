"""Per-state timeouts (seed 003: 30 s waiting for the model): the sweep hands expired sessions to a person.

The service is tested directly against the database; the Celery task as Celery runs it. With a broker
configured (the PostgreSQL run, ``CELERY_BROKER_URL=redis://…``) a real worker process is started against
pytest-django's test database, the task goes through Redis on a queue of its own, and the sessions
moved are the ones that worker moved. Without a broker (the SQLite run) ``.delay()`` must take Celery's
eager path, in-process.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from celery.backends.redis import RedisBackend
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult, EagerResult
from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents import tasks
from agents.errors import SessionHandedOff
from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create
from agents.sessions.codes import SYSTEM_TIMEOUT
from agents.sessions.decide import decision_make
from agents.sessions.interrupts import session_interrupt, session_resume
from agents.sessions.models import Session, Transition
from agents.sessions.services import session_create, session_transition
from agents.sessions.timeouts import session_timeouts_sweep
from decision_service.celery import app as celery_app
from rules.config.machines import machine_save
from rules.config.yaml_import import config_import
from rules.decisions.compute import DecideRequest
from tests.support import ADDRESS_FIELDS, DEMO, approved
from tests.support.worker import WAIT_SECONDS, Worker, result_backend_url

TASK = "agents.tasks.session_timeouts_sweep"


def _demo_agent() -> AgentRuntime:
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="timeouts")
    agent, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="timeouts")
    return agent


@pytest.fixture
def agent(db) -> AgentRuntime:
    return _demo_agent()


def _session(agent: AgentRuntime, key: str, machine: str, path: list[str], entered: dt.datetime) -> Session:
    """A session walked along ``path`` through the API's service, then backdated into its last state."""
    session = session_create(agent=agent, machine_key=machine, session_id=key)
    for here, there in zip([session.state, *path], path, strict=False):
        updates = ADDRESS_FIELDS if there == "executing" else None  # what the demo's executing requires
        session_transition(agent=agent, session_id=key, to=there, expected_state=here, updates=updates)
    Session.objects.filter(pk=session.pk).update(state_entered_at=entered)  # not audited: a test shortcut
    return Session.objects.get(pk=session.pk)


def _states() -> dict[str, tuple[str, int]]:
    return {s.key: (s.state, s.seq) for s in Session.objects.all()}


def _populate(agent: AgentRuntime, now: dt.datetime) -> None:
    ago = lambda seconds: now - dt.timedelta(seconds=seconds)  # noqa: E731
    _session(agent, "waited-too-long", "change_address", ["awaiting_intent"], ago(31))
    _session(agent, "just-on-time", "change_address", ["awaiting_intent", "collecting_params"], ago(30))
    _session(agent, "still-waiting", "change_address", ["awaiting_intent", "collecting_params", "executing"], ago(29.5))
    _session(agent, "no-timeout-here", "change_address", [], ago(3600))  # created has no timeout
    _session(agent, "with-a-person", "change_address", ["awaiting_intent", "human_handoff"], ago(3600))
    _session(agent, "done", "change_address", ["awaiting_intent", "failed"], ago(3600))
    _session(agent, "after-sales", "after_sales", ["received"], ago(86400))  # a machine without timeouts


def test_the_sweep_hands_expired_sessions_to_a_person(agent):
    now = timezone.now()
    _populate(agent, now)
    before = _states()

    assert session_timeouts_sweep(now=now) == 2

    after = _states()
    moved = {key for key in after if after[key] != before[key]}
    assert moved == {"waited-too-long", "just-on-time"}
    for key in moved:
        session = Session.objects.get(key=key)
        assert (session.state, session.seq, session.handoff_reason) == ("human_handoff", before[key][1] + 1, "timeout")
        assert session.state_entered_at == now
        row = Transition.objects.get(session=session, seq=session.seq)
        assert (row.from_state, row.to_state, row.kind, row.actor) == (
            before[key][0],
            "human_handoff",
            "timeout",
            SYSTEM_TIMEOUT,
        )
        assert row.reason == f"timeout: more than 30 s in {before[key][0]}"
    # Idempotent: a second sweep, now or a little later, finds nothing more to do.
    assert session_timeouts_sweep(now=now) == 0
    assert session_timeouts_sweep(now=now + dt.timedelta(seconds=0.4)) == 0
    assert _states() == after
    # Only later does the one that was still within its 30 s expire.
    assert session_timeouts_sweep(now=now + dt.timedelta(seconds=0.6)) == 1
    assert Session.objects.get(key="still-waiting").state == "human_handoff"


def test_a_timed_out_session_stays_with_the_person(agent):
    now = timezone.now()
    _session(agent, "slow", "change_address", ["awaiting_intent"], now - dt.timedelta(minutes=5))
    session_interrupt(agent=agent, session_id="slow", to="collecting_params", expected_state="awaiting_intent")
    Session.objects.filter(key="slow").update(state_entered_at=now - dt.timedelta(minutes=5))
    assert session_timeouts_sweep(now=now) == 1
    slow = Session.objects.get(key="slow")
    assert (slow.state, slow.stack) == ("human_handoff", ["awaiting_intent"])
    # The agent may not interrupt its way out of the queue, nor resume the state it had set aside.
    with pytest.raises(SessionHandedOff):
        session_interrupt(agent=agent, session_id="slow", to="executing", expected_state="human_handoff")
    with pytest.raises(SessionHandedOff):
        session_resume(agent=agent, session_id="slow", expected_state="human_handoff")
    assert Session.objects.get(key="slow").seq == slow.seq


def test_a_decision_does_not_take_a_timed_out_session_back(agent):
    now = timezone.now()
    _session(agent, "s1", "after_sales", [], now)
    # after_sales has no timeouts in the demo; give init one for this test.
    machine = Session.objects.get(key="s1").machine
    machine.timeouts = {"init": 30}
    approved(lambda: machine_save(machine=machine, actor=None, reason="timeouts test"))
    Session.objects.filter(key="s1").update(state_entered_at=now - dt.timedelta(seconds=60))
    assert session_timeouts_sweep(now=now) == 1
    with pytest.raises(SessionHandedOff):
        decision_make(
            agent=agent,
            request=DecideRequest(point="intent_routing", session_id="s1", input="我要退款"),
            apply=True,
        )
    assert Session.objects.get(key="s1").state == "human_handoff"


def test_the_beat_schedule_runs_the_sweep_often_enough():
    entries = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == TASK]
    assert len(entries) == 1
    # The shortest timeout in the seeds is 30 s: a sweep every few seconds hands sessions off in time.
    assert 0 < float(entries[0]["schedule"]) <= 10
    assert TASK in celery_app.tasks
    assert tasks.session_timeouts_sweep.name == TASK


def _sweep_through_the_worker(worker: Worker) -> int:
    result = tasks.session_timeouts_sweep.apply_async(queue=worker.queue)
    assert not isinstance(result, EagerResult), "with a broker configured the task must go through it"
    backend = RedisBackend(app=celery_app, url=result_backend_url())
    answer = AsyncResult(result.id, app=celery_app, backend=backend)
    deadline = time.monotonic() + WAIT_SECONDS
    try:
        while True:
            try:
                return int(answer.get(timeout=1, interval=0.1))
            except CeleryTimeoutError:
                if worker.process.poll() is not None:
                    pytest.fail(f"the worker exited with {worker.process.returncode} before answering")
                if time.monotonic() > deadline:
                    pytest.fail(f"no answer from the worker within {WAIT_SECONDS} s")
    finally:
        answer.forget()


# Marked rather than requesting ``transactional_db`` mid-test (see tests/rules/test_worker.py).
@pytest.mark.django_db(transaction=True)
def test_the_sweep_runs_in_celery(request):
    agent = _demo_agent()
    now = timezone.now()
    _session(agent, "expired", "change_address", ["awaiting_intent"], now - dt.timedelta(minutes=10))
    # Entered "in ten minutes": it cannot expire however long the worker takes to start.
    _session(agent, "fresh", "change_address", ["awaiting_intent"], now + dt.timedelta(minutes=10))

    if settings.CELERY_TASK_ALWAYS_EAGER:
        # No broker (SQLite run): ``.delay()`` runs the task here and now.
        result = tasks.session_timeouts_sweep.delay()
        assert isinstance(result, EagerResult)
        assert result.get() == 1
    else:
        if connection.vendor != "postgresql":
            pytest.fail(
                "a real worker needs a database another process can open: run it with DATABASE_URL=postgres://…"
            )
        worker = request.getfixturevalue("worker")
        # The polling deadline is the only clock here: an answer later than WAIT_SECONDS already fails.
        assert _sweep_through_the_worker(worker) == 1
        assert worker.process.poll() is None  # it is the running worker that answered
        assert _sweep_through_the_worker(worker) == 0  # idempotent through the worker too

    assert _states() == {"expired": ("human_handoff", 2), "fresh": ("awaiting_intent", 1)}
    row = Transition.objects.get(session__key="expired", seq=2)
    assert (row.kind, row.actor) == ("timeout", SYSTEM_TIMEOUT)

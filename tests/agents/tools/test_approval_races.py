"""People deciding one proposed tool call at the same moment, as real concurrent HTTP clients against a
running server (the set-up of ``tests/agents/sessions/test_concurrency.py``: pytest-django's threaded live
server, a connection per request on SQLite, clients released together by a barrier, several rounds).

Whatever the interleaving, exactly one decision wins (one ``approve`` / ``reject`` queue event, the call
decided by the winner, one move back); every other person gets a clean ``409 not_awaiting_approval``."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.queue.models import QueueEvent
from agents.runtimes.services import agent_create
from agents.tools.models import ToolCall
from rules.governance.tokens import staff_token_create
from tests.support import load_demo
from tests.support.approvals import approver, call_waiting, session_in_collecting
from tests.support.http import Agent, Answer, assert_gap_free
from tests.support.live_sqlite import connection_per_request

APPROVERS = 6
ROUNDS = 4


@pytest.fixture
def server(live_server, transactional_db, tmp_path) -> Iterator[str]:
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        yield live_server.url


def race(n: int, request: Callable[[int], Answer]) -> list[Answer]:
    barrier = threading.Barrier(n, timeout=30)

    def one(i: int) -> Answer:
        barrier.wait()
        return request(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def test_of_people_deciding_one_call_at_once_exactly_one_wins(server):
    load_demo()
    bot, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    people = [Agent(server, staff_token_create(user=approver(f"p{i}")), f"p{i}") for i in range(APPROVERS)]
    for round_ in range(ROUNDS):
        key = f"race-{round_}"
        session = session_in_collecting(bot, key)
        call = call_waiting(bot, session, operation_id=f"op-{round_}")

        def decide(i: int, pk: int = session.pk) -> Answer:
            step = "approve" if i % 2 == 0 else "reject"
            return people[i].post(f"/api/v1/queue/{pk}/{step}", {"note": f"person {i}"})

        answers = race(APPROVERS, decide)
        outcome = Counter((a.status, a.code) for a in answers)
        assert outcome == {(200, None): 1, (409, "not_awaiting_approval"): APPROVERS - 1}, outcome
        (won,) = [i for i, a in enumerate(answers) if a.status == 200]
        call = ToolCall.objects.get(pk=call.pk)
        assert call.decided_by.username == f"p{won}" and call.decision_note == f"person {won}"
        assert call.status == ("approved" if won % 2 == 0 else "rejected")
        events = list(QueueEvent.objects.filter(session_id=session.pk).values_list("kind", "actor"))
        assert events == [("approve" if won % 2 == 0 else "reject", f"operator:p{won}")]
        rows = assert_gap_free(key)
        assert [r.kind for r in rows][-2:] == ["approval", "approval"] and rows[-1].to_state == "collecting_params"
        for lost in answers:
            if lost.status == 409:
                assert lost.content_type == "application/problem+json"
                assert (lost.body["state"], lost.body["seq"]) == ("collecting_params", 4)

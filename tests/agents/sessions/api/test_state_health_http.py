"""State health over real HTTP (issue 26): how long sessions stay in each state, the moves their machines
forbid, and ghost failures (seed 000 §4.2) — read back from ``GET /metrics`` and the decision-point map.

The live server runs in this process: ``/metrics`` shows its in-process registry, so each test reads how
much a value moved. Time passes by rewriting timestamps through the ORM, never by sleeping.
"""

from __future__ import annotations

import datetime as dt
import urllib.request

import pytest
from django.db.models import F
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from agents.sessions.models import Session, Transition
from rules.models import DecisionRecord
from rules.reports.decision_map import decision_map
from tests.support.http import Agent, assert_problem, candidate, start_server


@pytest.fixture
def bot(live_server, transactional_db) -> Agent:
    return start_server(live_server)[0]


def scrape(bot: Agent) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(bot.url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _entered(session_id: str, seconds_ago: float) -> None:
    Session.objects.filter(key=session_id).update(state_entered_at=timezone.now() - dt.timedelta(seconds=seconds_ago))


DWELL = "arbiter_session_state_dwell_seconds"


def test_each_move_out_of_a_state_is_observed_in_its_bucket(bot):
    assert bot.start("after_sales", "dwell-1").status == 201
    before = scrape(bot)
    _entered("dwell-1", 7)  # seven seconds in init: above the 5 s bucket, within the 10 s one
    assert bot.move("dwell-1", "received", "init").status == 200
    _entered("dwell-1", 40)
    assert bot.move("dwell-1", "refund_review", "received").status == 200
    after = scrape(bot)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    init = {"machine": "after_sales", "state": "init"}
    assert moved(f"{DWELL}_count", **init) == 1
    assert moved(f"{DWELL}_bucket", **init, le="5.0") == 0
    assert moved(f"{DWELL}_bucket", **init, le="10.0") == 1
    assert 7 <= moved(f"{DWELL}_sum", **init) < 8
    received = {"machine": "after_sales", "state": "received"}
    assert moved(f"{DWELL}_count", **received) == 1
    assert moved(f"{DWELL}_bucket", **received, le="30.0") == 0
    assert moved(f"{DWELL}_bucket", **received, le="60.0") == 1


def test_refused_moves_and_actions_are_counted_by_the_state_they_were_refused_in(bot):
    assert bot.start("after_sales", "illegal-1").status == 201
    before = scrape(bot)
    assert_problem(bot.move("illegal-1", "closed", "init"), 422, "illegal_transition")
    assert_problem(bot.act("illegal-1", "issue_refund"), 422, "action_not_allowed")
    assert bot.move("illegal-1", "received", "init").status == 200
    assert_problem(bot.move("illegal-1", "escalated", "received"), 422, "illegal_transition")
    # An event awaiting_intent may not send (none of change_address's events leaves it).
    assert bot.start("change_address", "illegal-2").status == 201
    assert bot.move("illegal-2", "awaiting_intent", "created").status == 200
    event = {"event": "action_success", "expected_state": "awaiting_intent"}
    assert_problem(bot.post("/api/v1/sessions/illegal-2/events", event), 422, "event_not_allowed")
    after = scrape(bot)

    def moved(state, code):
        labels = {"machine": "after_sales", "state": state, "code": code}
        name = "arbiter_session_illegal_moves_total"
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("init", "illegal_transition") == 1
    assert moved("init", "action_not_allowed") == 1
    assert moved("received", "illegal_transition") == 1
    labels = {"machine": "change_address", "state": "awaiting_intent", "code": "event_not_allowed"}
    name = "arbiter_session_illegal_moves_total"
    assert value(after, name, **labels) - value(before, name, **labels) == 1
    # A legal move is no illegal one, and the refusals left no dwell behind (the session did not move).
    assert moved("received", "action_not_allowed") == 0
    assert (
        value(after, f"{DWELL}_count", machine="after_sales", state="init")
        - value(before, f"{DWELL}_count", machine="after_sales", state="init")
        == 1
    )


def test_a_decision_whose_state_is_never_reached_becomes_a_ghost_failure_after_the_configured_time(bot, settings):
    settings.ARBITER_GHOST_FAILURE_SECONDS = 60
    for session_id in ("ghost-1", "moved-1"):
        assert bot.start("after_sales", session_id).status == 201
        assert bot.move(session_id, "received", "init").status == 200
        # The runtime asks, is told to close the order, and does not apply it...
        told = bot.decide(
            session_id, "intent_routing", apply=False, input="thanks", candidate=candidate("close_order", 0.95)
        )
        assert told.status == 201, told
        assert told.body["decision"] == "close_order"
    # ...one runtime then moves as told; the other forgets (seed 000 §4.2).
    assert bot.move("moved-1", "closed", "received").status == 200
    made = DecisionRecord.objects.get(session_id="ghost-1")

    def ghosts(now):
        point = next(p for p in decision_map(days=1, now=now)["points"] if p["key"] == "intent_routing")
        return point["ghost_failures"], [g["session_id"] for g in point["ghost_failures_latest"]]

    # Not yet: the session still has time to get there.
    assert ghosts(made.created_at + dt.timedelta(seconds=59)) == (0, [])
    assert ghosts(made.created_at + dt.timedelta(seconds=61)) == (1, ["ghost-1"])
    assert value(scrape(bot), "arbiter_ghost_failures_recent", point="intent_routing") == 0

    # Everything two minutes earlier: the decision never followed is counted in /metrics as well.
    earlier = F("created_at") - dt.timedelta(seconds=120)
    DecisionRecord.objects.filter(session_id__in=["ghost-1", "moved-1"]).update(created_at=earlier)
    Transition.objects.filter(session__key__in=["ghost-1", "moved-1"]).update(created_at=earlier)
    assert value(scrape(bot), "arbiter_ghost_failures_recent", point="intent_routing") == 1
    # A move into the mapped state made too late does not undo the ghost failure.
    assert bot.move("ghost-1", "closed", "received").status == 200
    assert value(scrape(bot), "arbiter_ghost_failures_recent", point="intent_routing") == 1

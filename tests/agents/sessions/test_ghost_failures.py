"""Ghost failures (seed 000 §4.2) as the decision-point map shows them: which decisions are judged ghosts
and which are not, in the staff API, the CSV and the admin page (in Chinese too). Time passes by giving
``decision_map`` its ``now`` or by moving timestamps through the ORM, never by sleeping."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Transition
from agents.sessions.services import session_create, session_transition
from rules.governance.tokens import staff_token_create
from rules.models import DecisionRecord
from rules.reports.decision_map import decision_map
from tests.support import agent_api

pytestmark = pytest.mark.django_db

WAIT = 300  # ARBITER_GHOST_FAILURE_SECONDS's default


@pytest.fixture
def told(demo, django_capture_on_commit_callbacks):
    """Sessions of one agent, each told something by intent_routing; returns the decisions by session."""
    api = agent_api("ghost_bot")
    agent = AgentRuntime.objects.get(name="ghost_bot")

    def decide(session_id: str, decision: str, *, apply: bool = False, state: str = "received") -> DecisionRecord:
        with django_capture_on_commit_callbacks(execute=True):
            session_create(agent=agent, machine_key="after_sales", session_id=session_id)
            if state != "init":
                session_transition(agent=agent, session_id=session_id, to=state, expected_state="init")
            body = {"point": "intent_routing", "session_id": session_id, "apply": apply, "input": "hi"}
            body["candidate"] = {"decision": decision, "confidence": 0.95}
            answer = api.post("/api/v1/decisions", body, format="json")
        assert answer.status_code == 201, answer.content
        assert answer.json()["decision"] == decision
        return DecisionRecord.objects.get(session_id=session_id)

    made = {
        "forgot": decide("forgot", "close_order"),  # told to close, never moved: a ghost
        "applied": decide("applied", "close_order", apply=True),  # moved by the decide itself
        "there": decide("there", "general_query"),  # maps to received, where it already is
        # close_order from init: the machine refuses the mapped move and falls back to intent_clarify
        "refused": decide("refused", "close_order", apply=True, state="init"),
    }
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/api/v1/decisions", {"point": "intent_routing", "input": "hi"}, format="json")  # no session
    return made


def _point(report):
    return next(p for p in report["points"] if p["key"] == "intent_routing")


def test_only_decisions_whose_mapped_state_was_not_reached_in_time_are_ghosts(told):
    latest = max(r.created_at for r in told.values())
    assert _point(decision_map(days=1, now=latest + dt.timedelta(seconds=WAIT - 1)))["ghost_failures"] == 0
    report = decision_map(days=1, now=latest + dt.timedelta(seconds=WAIT + 1))
    assert report["ghost_failure_seconds"] == WAIT
    point = _point(report)
    assert point["ghost_failures"] == 2
    shown = {g["session_id"]: g for g in point["ghost_failures_latest"]}
    assert set(shown) == {"forgot", "refused"}
    assert shown["forgot"] == {
        "decision_id": str(told["forgot"].pk),
        "created_at": told["forgot"].created_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
        "session_id": "forgot",
        "session_state": "received",
        "decision": "close_order",
        "mapped_state": "closed",
    }
    assert shown["refused"]["session_state"] == "init" and shown["refused"]["mapped_state"] == "closed"
    # Another point's map is its own: refund_approval was not asked.
    assert next(p for p in report["points"] if p["key"] == "refund_approval")["ghost_failures"] == 0


def test_the_map_shows_them_in_the_api_the_csv_and_the_admin(told, actor, settings):
    settings.ARBITER_GHOST_FAILURE_SECONDS = 60
    older = F("created_at") - dt.timedelta(seconds=120)
    DecisionRecord.objects.all().update(created_at=older)
    Transition.objects.all().update(created_at=older)

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=actor)}")
    report = api.get("/api/v1/reports/decision-map?point=intent_routing").json()
    assert report["ghost_failure_seconds"] == 60
    assert report["points"][0]["ghost_failures"] == 2
    rows = list(csv.DictReader(io.StringIO(api.get("/api/v1/reports/decision-map.csv").content.decode())))
    assert {r["point"]: r["ghost_failures"] for r in rows}["intent_routing"] == "2"

    admin = Client()
    admin.force_login(actor)
    page = admin.get("/admin/rules/decisionrecord/map/?point=intent_routing").content.decode()
    assert "2 decisions whose session did not reach their mapped state within 60 s" in page
    assert f'href="/admin/rules/decisionrecord/{told["forgot"].pk}/change/"' in page
    assert "forgot: close_order in received, never reached closed" in page
    page = admin.get("/admin/rules/decisionrecord/map/?point=intent_routing", HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = page.content.decode()
    assert "幽灵失败" in text
    assert "2 个决策的会话未在 60 秒内进入映射的状态" in text

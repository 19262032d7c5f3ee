"""The rule simulator's staff API: the decide answer under the current revision, a past revision or an
open change request's proposal — and not one row written anywhere."""

from __future__ import annotations

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.document.validate import config_from_yaml
from rules.governance.change_requests import change_request_approve, change_request_propose
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequestState
from tests.support import DEMO_TEXT, reviewed_digest

LIMIT_1000 = DEMO_TEXT.replace("    value: 500\n", "    value: 1000\n")
LIMIT_99999 = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")


@pytest.fixture
def staff(editor) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    return api


@pytest.fixture
def history(demo, editor, approver):
    """Revision 1: the demo (limit 500). Revision 2: limit 1000 (approved). Pending: limit 99999."""
    raised = change_request_propose(document=config_from_yaml(LIMIT_1000), actor=editor, reason="raise")
    applied = change_request_approve(request=raised, digest=reviewed_digest(raised), actor=approver, reason="ok")
    assert applied.state == ChangeRequestState.APPLIED
    pending = change_request_propose(document=config_from_yaml(LIMIT_99999), actor=editor, reason="raise more")
    assert pending.state == ChangeRequestState.PENDING
    return pending


def simulate(api: APIClient, **body):
    return api.post("/api/v1/simulations", body, format="json")


def refund(amount: float, **more):
    return {"point": "refund_approval", "facts": {"refund_amount": amount}, **more}


def test_the_answer_is_the_decide_answer_without_id(staff, history):
    answer = simulate(staff, **refund(800))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert "id" not in body
    assert (body["decision"], body["ruled_by"], body["revision"], body["change_request"], body["created_at"]) == (
        "auto_approve",
        "default",
        2,
        None,
        None,
    )
    assert set(body) == {
        "point",
        "decision",
        "ruled_by",
        "rule",
        "matched_rules",
        "candidate",
        "overridden",
        "needs_candidate",
        "reason",
        "revision",
        "evaluated_us",
        "created_at",
        "change_request",
    }


def test_under_a_past_revision_and_under_a_pending_change_request(staff, history):
    then = simulate(staff, **refund(800, revision=1)).json()
    assert (then["decision"], then["rule"]["key"], then["revision"]) == ("human_handoff", "over_auto_refund_limit", 1)
    now = simulate(staff, **refund(5000)).json()
    assert (now["decision"], now["revision"]) == ("human_handoff", 2)
    proposed = simulate(staff, **refund(5000, change_request=history.pk)).json()
    assert (proposed["decision"], proposed["revision"], proposed["change_request"]) == ("auto_approve", 2, history.pk)


def test_candidates_raw_output_and_session_state_are_judged_as_by_decide(staff, history):
    hard = simulate(
        staff,
        point="intent_routing",
        input="我要投诉",
        candidate={"decision": "general_query", "confidence": 0.9},
    ).json()
    assert (hard["decision"], hard["rule"]["key"], hard["overridden"]) == ("human_handoff", "high_risk_keyword", True)
    raw = simulate(staff, point="intent_routing", input="颜色", candidate_raw="not json at all").json()
    assert (raw["decision"], raw["ruled_by"], raw["candidate"]) == ("intent_clarify", "default", None)
    asks = simulate(staff, point="intent_routing", input="有几种颜色", session_state="received").json()
    assert asks["needs_candidate"] is True and asks["decision"] is None


def test_nothing_is_written(staff, history):
    def rows() -> dict[str, int]:
        return {m._meta.label: m._default_manager.count() for m in apps.get_models()}

    before = rows()
    for body in (
        refund(800),
        refund(800, revision=1),
        refund(800, change_request=history.pk),
        {"point": "intent_routing", "input": "有几种颜色"},  # needs a candidate: no "ask your LLM" count
        {"point": "intent_routing", "input": "x", "candidate_raw": "{oops"},  # no anomaly
        {"point": "intent_routing", "input": "x", "candidate": {"decision": "nonsense", "confidence": 0.9}},
    ):
        assert simulate(staff, **body).status_code == 200
    assert rows() == before


def test_refusals(staff, history, approver):
    assert simulate(staff, **refund(1, revision=99)).json()["code"] == "not_found"
    assert simulate(staff, **refund(1, change_request=999)).status_code == 404
    both = simulate(staff, **refund(1, revision=1, change_request=history.pk))
    assert (both.status_code, both.json()["code"]) == (422, "invalid_request")
    assert "change_request" in both.json()["errors"]
    unknown = simulate(staff, point="nope")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_point")
    wrong_fact = simulate(staff, point="refund_approval", facts={"refund_amount": "many"})
    assert (wrong_fact.status_code, wrong_fact.json()["code"]) == (422, "invalid_request")
    change_request_approve(
        request=history, digest=reviewed_digest(history), actor=approver, reason="ok"
    )  # applied: no longer open
    closed = simulate(staff, **refund(1, change_request=history.pk))
    assert (closed.status_code, closed.json()["code"]) == (409, "not_pending")


def test_agent_tokens_are_refused(demo, editor):
    _, token = agent_create(name="bot", point_keys=["refund_approval"], actor=None, reason="t")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert simulate(api, **refund(1)).status_code == 403

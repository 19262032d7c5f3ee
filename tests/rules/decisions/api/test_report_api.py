"""GET /api/v1/reports/decision-map (JSON) and /api/v1/reports/decision-map.csv through the HTTP layer."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.governance.tokens import staff_token_create
from rules.models import DecisionRecord
from tests.support.reports import CONFIG

pytestmark = pytest.mark.django_db

URL = "/api/v1/reports/decision-map"


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def config(actor):
    # A reason a spreadsheet would take for a formula: the CSV must not.
    return config_import(text=CONFIG, source="test", actor=actor, reason='=HYPERLINK("http://x")')


@pytest.fixture
def staff(actor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=actor)}")
    return api


def _log(at, **kw):
    return DecisionRecord.objects.create(created_at=at, point="guarded", agent_name="bot", revision=1, **kw)


def test_the_map_as_json_counts_up_to_the_request(config, staff):
    now = timezone.now()
    _log(now - dt.timedelta(days=2), decision="answer", ruled_by="llm_candidate", candidate_decision="answer")
    _log(
        now - dt.timedelta(days=3),
        decision="handoff",
        ruled_by="hard_rule",
        rule_key="complaint",
        candidate_decision="answer",
        overridden=True,
    )
    _log(now - dt.timedelta(days=20), decision="clarify", ruled_by="default")
    _log(now + dt.timedelta(hours=1), decision="clarify", ruled_by="default")  # after the request: not counted
    response = staff.get(URL)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["window"]["days"] == 14
    assert {p["key"] for p in body["points"]} == {"guarded", "half", "open"}
    assert body["governance"] == {"controlled": 1, "partial": 1, "naked": 1}
    guarded = next(p for p in body["points"] if p["key"] == "guarded")
    assert (guarded["decisions"], guarded["overridden"], guarded["override_rate"]) == (2, 1, 0.5)
    assert guarded["by_ruled_by"] == {"hard_rule": 1, "llm_candidate": 1, "default": 0}
    wide = staff.get(URL, {"days": "30", "point": "guarded"}).json()
    assert [p["key"] for p in wide["points"]] == ["guarded"] and wide["points"][0]["decisions"] == 3


@pytest.mark.parametrize("days", ["0", "91", "abc", "7.5", ""])
def test_bad_days_is_a_problem(config, staff, days):
    # Empty too: the spec says a given days is a whole number (the admin's form still takes empty as
    # the default; only absent means the default here).
    response = staff.get(URL, {"days": days})
    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert (body["code"], body["errors"]) == ("invalid_request", {"days": ["A whole number from 1 to 90."]})
    assert staff.get(URL + ".csv", {"days": days})["Content-Type"] == "application/problem+json"


def test_an_unknown_point_is_404(config, staff):
    response = staff.get(URL, {"point": "nowhere"})
    assert (response.status_code, response.json()["code"]) == (404, "unknown_point")


def test_only_staff_tokens_may_read_it(config, actor):
    anonymous = APIClient().get(URL)
    assert (anonymous.status_code, anonymous.json()["code"]) == (401, "not_authenticated")
    _agent, token = agent_create(name="bot", point_keys=["guarded"], actor=actor, reason="test")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    refused = agent.get(URL)
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")


def test_a_write_method_is_405(config, staff):
    response = staff.post(URL, {}, format="json")
    assert (response.status_code, response.json()["code"]) == (405, "method_not_allowed")


def test_the_csv_download(config, staff):
    _log(
        timezone.now() - dt.timedelta(days=1), decision="answer", ruled_by="llm_candidate", candidate_decision="answer"
    )
    response = staff.get(URL + ".csv", {"days": "7"}, HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="decision-map-7d')
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8"))))
    assert [r["point"] for r in rows] == ["guarded", "half", "open"]
    guarded = rows[0]
    assert (guarded["governance"], guarded["decisions"], guarded["llm_candidate"], guarded["days"]) == (
        "controlled",
        "1",
        "1",
        "7",
    )
    assert guarded["shadowed_rules"] == "complaint_again<complaint"
    assert guarded["last_change_reason"] == '\'=HYPERLINK("http://x")'

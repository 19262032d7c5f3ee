"""The decision-point map page in the admin: linked from the index, charts drawn on the server, every
number a link to the filtered log that holds exactly that many rows."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from rules.config.runtime import engines
from rules.config.yaml_import import config_import
from rules.models import DecisionRecord
from tests.support.reports import CONFIG

pytestmark = pytest.mark.django_db

MAP = "/admin/rules/decisionrecord/map/"


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def logged(actor):
    config_import(text=CONFIG, source="test", actor=actor, reason="setup")
    now = timezone.now()

    def log(at, **kw):
        DecisionRecord.objects.create(created_at=at, point="guarded", agent_name="bot", revision=1, **kw)

    log(
        now - dt.timedelta(days=1),
        decision="answer",
        ruled_by="llm_candidate",
        candidate_decision="answer",
        matched_rules=[{"key": "trial", "priority": 60, "category": "quality", "outcome": "clarify", "shadow": True}],
    )
    log(
        now - dt.timedelta(days=2),
        decision="handoff",
        ruled_by="hard_rule",
        rule_key="complaint",
        candidate_decision="answer",
        overridden=True,
        tokens_prompt=10,
        tokens_completion=2,
        matched_rules=[
            {"key": "complaint", "priority": 10, "category": "compliance", "outcome": "handoff", "shadow": False}
        ],
    )
    log(now - dt.timedelta(days=3), decision="clarify", ruled_by="default")
    log(now - dt.timedelta(days=30), decision="clarify", ruled_by="default")


@pytest.fixture
def admin(staff_user):
    client = Client()
    client.force_login(staff_user)
    return client


def _rows(client, url):
    page = client.get(unescape(url)).content.decode()
    return len(re.findall(r'<td class="field-time">|<th class="field-time">', page))


def test_the_index_links_to_the_map(admin):
    page = admin.get("/admin/").content.decode()
    assert f'href="{MAP}"' in page


def test_the_page_draws_three_charts_per_point_and_numbers_link_to_their_rows(logged, admin):
    response = admin.get(MAP, {"days": "14"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="chart chart-ruled-by"') == 3
    assert page.count('class="chart chart-override-rate"') == 3
    assert page.count('class="chart chart-rule-hits"') == 3
    assert "<script" not in page.split('id="content-main"')[1]  # drawn on the server
    section = page.split('id="point-guarded"')[1].split('class="module map-point"')[0]
    assert "governance-controlled" in section
    decisions = re.search(r'class="n-decisions" href="([^"]+)">(\d+)<', section)
    assert decisions.group(2) == "3" and _rows(admin, decisions.group(1)) == 3
    overridden = re.search(r'class="n-overridden" href="([^"]+)">(\d+)<', section)
    assert overridden.group(2) == "1" and _rows(admin, overridden.group(1)) == 1
    # every link in the traffic table and the top rules leads to exactly as many rows as it says
    for url, shown in re.findall(r'<td><a href="(/admin/rules/decisionrecord/\?[^"]+)">(\d+)</a>', section):
        assert _rows(admin, url) == int(shown), unescape(url)
    # a bar of the ruled_by chart links to that day's rows of that kind
    bar = re.search(r'<a href="([^"]+)"><rect class="bar bar-hard_rule"', section)
    assert _rows(admin, bar.group(1)) == 1


def test_the_point_filter_and_the_csv(logged, admin):
    page = admin.get(MAP, {"point": "half", "days": "7"}).content.decode()
    assert 'id="point-half"' in page and 'id="point-guarded"' not in page
    csv = admin.get(MAP, {"point": "guarded", "days": "7", "format": "csv"})
    assert csv["Content-Type"] == "text/csv; charset=utf-8"
    lines = csv.content.decode().splitlines()
    assert len(lines) == 2 and lines[1].startswith("guarded,")


def test_bad_parameters_fall_back_with_a_message(logged, admin):
    page = admin.get(MAP, {"point": "nowhere", "days": "500"}, follow=True).content.decode()
    assert "There is no decision point" in page and "Days must be a whole number" in page
    assert 'id="point-guarded"' in page


def test_staff_who_may_not_read_the_log_may_not_see_the_map(logged):
    clerk = get_user_model().objects.create_user(username="clerk", password="pw-clerk-123", is_staff=True)
    client = Client()
    client.force_login(clerk)
    assert client.get(MAP).status_code == 403
    assert MAP not in client.get("/admin/").content.decode()

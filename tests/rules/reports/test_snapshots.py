"""Snapshots of the decision-point map: taken by the command and by the schedule when due, e-mailed to
staff with what changed since the snapshot before, and the report (API and admin page) showing what
changed since the latest one."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from decision_service.celery import app as celery_app
from rules.config.yaml_import import config_import
from rules.governance.notifications import decision_map_snapshot_mail
from rules.governance.tokens import staff_token_create
from rules.models import DecisionMapSnapshot, DecisionRecord, SnapshotTrigger
from rules.reports.snapshot_jobs import decision_map_snapshot_if_due, decision_map_snapshot_take
from rules.reports.snapshots import OVERRIDE_RATE_MOVE, map_changes
from tests.support import approved
from tests.support.reports import CONFIG

pytestmark = pytest.mark.django_db

T1 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
T2 = T1 + dt.timedelta(days=14)
# guarded loses its confidence guard (naked), "open" goes, "fresh" comes.
CHANGED = CONFIG.replace(
    """      - {key: low_confidence, priority: 50, category: quality, outcome: clarify,
         conditions: [{candidate_confidence_below: min_confidence}]}
      - {key: trial""",
    """      - {key: trial""",
    1,
).replace("  - key: open\n", "  - key: fresh\n")


def point(key, governance="controlled", rate=None):
    return {"key": key, "governance": governance, "override_rate": rate}


def test_map_changes_new_removed_governance_and_moves():
    before = {
        "points": [point("a", rate=0.10), point("b", rate=0.10), point("c", rate=0.10), point("gone"), point("d")]
    }
    after = {
        "points": [
            point("a", rate=0.15),  # moved by exactly the threshold
            point("b", rate=0.149),  # not quite
            point("c", "naked", rate=None),  # a rate that disappears is no move
            point("d", "partial", rate=0.9),  # nor one that appears
            point("new"),
        ]
    }
    assert OVERRIDE_RATE_MOVE == 0.05
    assert map_changes(before, after) == {
        "new_points": ["new"],
        "removed_points": ["gone"],
        "governance_changes": [
            {"point": "c", "from": "controlled", "to": "naked"},
            {"point": "d", "from": "controlled", "to": "partial"},
        ],
        "override_rate_moves": [{"point": "a", "from": 0.10, "to": 0.15, "change": 0.05}],
    }
    assert map_changes(before, after, point="a")["removed_points"] == []


@pytest.fixture
def config(actor):
    return config_import(text=CONFIG, source="test", actor=actor, reason="snapshot fixture")


@pytest.fixture
def staff_mail(actor):
    User = get_user_model()
    actor.email = "ops@example.com"
    actor.save()
    User.objects.create_user(username="lead", email="lead@example.com", is_staff=True)
    User.objects.create_user(username="customer", email="customer@example.com")  # not staff
    User.objects.create_user(username="gone", email="gone@example.com", is_staff=True, is_active=False)
    return ["lead@example.com", "ops@example.com"]


def log(at, **kw):
    return DecisionRecord.objects.create(created_at=at, point="guarded", agent_name="bot", revision=1, **kw)


@pytest.fixture
def committed(django_capture_on_commit_callbacks, monkeypatch):
    """Run what waits for the commit (the e-mail task) as the end of the test's transaction would. The
    task runs in this process even when a broker is configured: what is written to whom is the point
    here, and mail.outbox lives in this process."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_the_command_takes_a_snapshot_now_and_mails_it_to_staff(config, staff_mail, mailoutbox, capsys, committed):
    with committed():
        call_command("decision_map", "--snapshot")
    snapshot = DecisionMapSnapshot.objects.get()
    assert snapshot.trigger == SnapshotTrigger.COMMAND and snapshot.days == 14
    assert [p["key"] for p in snapshot.report["points"]] == ["guarded", "half", "open"]
    assert "since_snapshot" not in snapshot.report
    assert (snapshot.mailed_to, snapshot.mailed_at is not None) == (2, True)
    assert f"Snapshot {snapshot.pk} of the decision-point map" in capsys.readouterr().out  # mailed after it spoke
    (mail,) = mailoutbox
    assert sorted(mail.to) == staff_mail
    assert mail.subject.startswith("[Arbiter] Decision-point map of ")
    assert mail.subject.endswith("1 controlled, 1 partial, 1 naked")
    assert "This is the first snapshot" in mail.body
    assert "guarded: controlled" in mail.body and "open: naked" in mail.body
    assert "/admin/rules/decisionrecord/map/" in mail.body


def test_the_second_snapshot_mail_says_what_changed(config, actor, staff_mail, mailoutbox, committed):
    log(
        T1 - dt.timedelta(days=1),
        decision="handoff",
        ruled_by="hard_rule",
        candidate_decision="answer",
        overridden=True,
    )
    log(T1 - dt.timedelta(days=2), decision="answer", ruled_by="llm_candidate", candidate_decision="answer")
    first = decision_map_snapshot_take(trigger=SnapshotTrigger.SCHEDULE, now=T1)
    approved(lambda: config_import(text=CHANGED, source="test", actor=actor, reason="drop the guard"))
    for days in (1, 2, 3):
        log(
            T2 - dt.timedelta(days=days),
            decision="clarify",
            ruled_by="default",
            candidate_decision="answer",
            overridden=True,
        )
    with committed():
        second = decision_map_snapshot_take(trigger=SnapshotTrigger.SCHEDULE, now=T2)
    assert second.pk != first.pk
    body = mailoutbox[-1].body
    assert "Since the previous snapshot (2026-06-01T09:00:00Z):" in body
    assert "- New points: fresh" in body
    assert "- Removed points: open" in body
    assert "- Governance of guarded: controlled → naked" in body
    assert "- Override rate of guarded: 50.0% → 100.0% (+50.0 points)" in body
    assert "at least 5 points" in body


def test_a_snapshot_is_mailed_once(config, staff_mail, mailoutbox, committed):
    with committed():
        snapshot = decision_map_snapshot_take(trigger=SnapshotTrigger.COMMAND, now=T1)
    assert len(mailoutbox) == 1
    assert decision_map_snapshot_mail(snapshot_id=snapshot.pk) == 0  # a redelivered task
    assert len(mailoutbox) == 1


def test_the_schedule_takes_one_when_the_latest_is_14_days_old(config, mailoutbox):
    taken = decision_map_snapshot_if_due(now=T1)
    assert taken is not None
    assert decision_map_snapshot_if_due(now=T1 + dt.timedelta(days=13, hours=23)) is None
    later = decision_map_snapshot_if_due(now=T1 + dt.timedelta(days=14))
    assert later is not None and later != taken
    assert DecisionMapSnapshot.objects.count() == 2
    assert set(DecisionMapSnapshot.objects.values_list("trigger", flat=True)) == {SnapshotTrigger.SCHEDULE}


def test_beat_runs_the_rollups_and_the_snapshot(settings):
    schedule = {entry["task"]: entry["schedule"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["rules.tasks.decision_rollups_refresh"] == 3600.0
    assert schedule["rules.tasks.decision_map_snapshot_if_due"] == 3600.0
    celery_app.loader.import_default_modules()
    for name in schedule:
        assert name in celery_app.tasks


def test_the_report_shows_what_changed_since_the_latest_snapshot(config, actor):
    log(T1 - dt.timedelta(days=1), decision="answer", ruled_by="llm_candidate", candidate_decision="answer")
    snapshot = decision_map_snapshot_take(trigger=SnapshotTrigger.COMMAND, now=T1)
    approved(lambda: config_import(text=CHANGED, source="test", actor=actor, reason="drop the guard"))

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=actor)}")
    changes = api.get("/api/v1/reports/decision-map").json()["since_snapshot"]
    assert changes["snapshot"] == {"id": snapshot.pk, "taken_at": "2026-06-01T09:00:00Z", "days": 14}
    assert changes["new_points"] == ["fresh"] and changes["removed_points"] == ["open"]
    assert changes["governance_changes"] == [{"point": "guarded", "from": "controlled", "to": "naked"}]
    one = api.get("/api/v1/reports/decision-map?point=guarded").json()["since_snapshot"]
    assert (one["new_points"], one["removed_points"]) == ([], [])

    client = Client()
    client.force_login(actor)
    page = client.get("/admin/rules/decisionrecord/map/").content.decode()
    assert "Compared with the snapshot of 2026-06-01 09:00:00 UTC" in page
    assert "Governance of guarded: controlled → naked" in page
    assert "New points: fresh" in page


def test_before_any_snapshot_the_report_says_so(config, actor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=actor)}")
    assert api.get("/api/v1/reports/decision-map").json()["since_snapshot"] is None
    client = Client()
    client.force_login(actor)
    assert "No snapshot has been taken yet" in client.get("/admin/rules/decisionrecord/map/").content.decode()

"""manage.py generate_decisions: a synthetic log that follows the loaded configuration, whose report
with rollups built equals the report counted from the log."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.utils import timezone

from agents.sessions.models import Anomaly
from rules.config.selectors import config_document
from rules.models import CandidateRequestCount, DecisionRecord, DecisionRollupDay
from rules.reports.decision_map import decision_map
from rules.reports.rollups import decision_rollups_refresh

pytestmark = pytest.mark.django_db


def test_the_generated_log_follows_the_configuration(demo, capsys):
    decision_rollups_refresh(horizon=5)
    assert DecisionRollupDay.objects.count() == 5
    call_command("generate_decisions", "--count", "600", "--days", "3")
    assert "Wrote 600 decisions" in capsys.readouterr().out
    assert DecisionRollupDay.objects.count() == 2  # the three closed days written to lost their rollups
    points = {p["key"]: p for p in config_document()["points"]}
    rows = list(DecisionRecord.objects.all())
    assert len(rows) == 600
    for row in rows:
        point = points[row.point]
        assert row.decision in point["outcomes"]
        if row.ruled_by == "hard_rule":
            rule = next(r for r in point["rules"] if r["key"] == row.rule_key)
            assert (rule["outcome"], rule.get("mode", "enforce")) == (row.decision, "enforce")
        if row.ruled_by == "llm_candidate":
            assert row.candidate_decision == row.decision and row.candidate_decision in point["candidate_whitelist"]
        assert row.overridden == bool(row.candidate_decision and row.candidate_decision != row.decision)
    invalid = [r for r in rows if r.candidate_invalid]
    assert invalid and Anomaly.objects.count() == len(invalid)
    assert {a.created_at for a in Anomaly.objects.all()} == {r.created_at for r in invalid}
    assert {r.ruled_by for r in rows} == {"hard_rule", "llm_candidate", "default"}
    assert any(r.overridden for r in rows) and any(not r.candidate_decision and not r.candidate_raw for r in rows)
    assert CandidateRequestCount.objects.exists()

    now = timezone.now()
    direct = decision_map(days=4, now=now)
    assert sum(p["decisions"] for p in direct["points"]) == 600
    decision_rollups_refresh(now=now, horizon=5)
    rolled = decision_map(days=4, now=now)
    assert rolled["window"]["rolled_up_days"] >= 2
    assert {**rolled, "window": None} == {**direct, "window": None}

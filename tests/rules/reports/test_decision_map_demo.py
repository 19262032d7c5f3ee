"""The map of the after-sales demo under the real approval gate: both points are controlled, and an open
change request shows on the points it touches."""

from __future__ import annotations

import pytest

from rules.config.runtime import engines
from rules.governance.change_requests import change_request_propose
from rules.reports.decision_map import decision_map
from tests.support import DEMO_TEXT, load_demo, make_user

pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _fresh_engines():
    engines.clear()
    yield
    engines.clear()


@pytest.fixture
def editor(db):
    return make_user("editor", "config_editors")


@pytest.fixture
def demo_by_editor(editor):
    """The demo imported by the editor, whom the map names as the points' last change."""
    return load_demo(actor=editor, reason="demo")


def test_the_demo_points_are_controlled_and_say_why(demo_by_editor, editor):
    points = {p["key"]: p for p in decision_map()["points"]}
    routing, refund = points["intent_routing"], points["refund_approval"]
    assert (routing["governance"], refund["governance"]) == ("controlled", "controlled")
    assert routing["reasons"] == [
        "a candidate is accepted only from the whitelist (close_order, general_query, product_info) and only "
        "at a confidence of at least min_confidence (0.65): rule low_confidence",
        "high-risk branches are decided by hard rules: high_risk_keyword, candidate_not_whitelisted",
    ]
    assert refund["reasons"][0] == "no candidate is ever accepted: the candidate whitelist is empty"
    assert routing["shadowed_rules"] == [] and refund["shadowed_rules"] == []
    assert routing["last_change"]["who"] == "editor" and routing["last_change"]["reason"] == "demo"


def test_an_open_change_request_shows_on_the_points_it_touches(demo_by_editor, editor):
    raised = DEMO_TEXT.replace("value: 500", "value: 900")
    from rules.config.document.validate import config_from_yaml

    request = change_request_propose(document=config_from_yaml(raised), actor=editor, reason="raise the limit")
    assert request.state == "pending"
    points = {p["key"]: p for p in decision_map()["points"]}
    assert points["intent_routing"]["pending_changes"] == []
    pending = points["refund_approval"]["pending_changes"]
    assert [(p["id"], p["state"], p["risk"], p["author"], p["reason"]) for p in pending] == [
        (request.pk, "pending", "high", "editor", "raise the limit")
    ]

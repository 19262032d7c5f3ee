"""Change requests from a partial document (``"partial": true``): only the records they touch, merged onto
the live configuration, under the same four-eyes gate and duplicate check as a whole document — over HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from rules.config.selectors import config_document
from rules.governance.tokens import staff_token_create
from rules.models import Rule, Threshold
from tests.support import reviewed_digest

pytestmark = pytest.mark.django_db

RULE_PRIORITY = """
points:
  - key: refund_approval
    rules:
      - key: over_auto_refund_limit
        priority: 15
"""


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return client


def propose(client, config: str, **extra):
    return client.post(
        "/api/v1/change-requests",
        {"reason": "a small change", "config": config, "partial": True, **extra},
        format="json",
    )


def test_a_partial_change_to_a_high_risk_rule_waits_for_a_second_person(demo, editor, approver):
    before = config_document()
    author = api(editor)
    answer = propose(author, RULE_PRIORITY)
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["state"], body["risk"]) == ("pending", "high")
    assert body["diff"] == [
        {"record": "rule refund_approval.over_auto_refund_limit", "field": "priority", "before": 10, "after": 15}
    ]
    assert config_document() == before  # nothing applied yet
    # The same partial again is the same change: the duplicate check holds.
    again = propose(author, RULE_PRIORITY)
    assert (again.status_code, again.json()["code"]) == (409, "duplicate_change_request")
    # The author may not approve it; a second person does, and only the priority changed.
    refused = author.post(f"/api/v1/change-requests/{body['id']}/approve", {"digest": body["digest"]}, format="json")
    assert refused.status_code == 403
    from rules.models import ChangeRequest

    digest = reviewed_digest(ChangeRequest.objects.get(pk=body["id"]))
    approved = api(approver).post(f"/api/v1/change-requests/{body['id']}/approve", {"digest": digest}, format="json")
    assert approved.json()["state"] == "applied", approved.content
    rule = Rule.objects.get(key="over_auto_refund_limit")
    assert (rule.priority, rule.category, rule.conditions.count()) == (15, "risk", 1)


def test_a_low_risk_partial_applies_at_once_and_a_new_record_is_added(demo, editor):
    answer = propose(api(editor), "thresholds:\n  - key: greeting_delay\n    value: 2\n    unit: s\n")
    assert answer.status_code == 201, answer.content
    assert answer.json()["state"] == "applied"
    assert {r["record"] for r in answer.json()["diff"]} == {"threshold greeting_delay"}
    assert Threshold.objects.get(key="greeting_delay").value == 2
    assert Threshold.objects.filter(key="auto_refund_limit").exists()  # untouched records stay


def test_deleting_needs_the_delete_section(demo, editor):
    answer = propose(api(editor), "delete:\n  rules:\n    refund_approval: [over_auto_refund_limit]\n")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["state"] == "pending"  # removing a risk rule is high-risk too
    assert {r["record"] for r in body["diff"]} == {"rule refund_approval.over_auto_refund_limit"}


@pytest.mark.parametrize(
    ("config", "located"),
    [
        # The partial's own path and line, not the merged document's.
        ("points:\n  - key: refund_approval\n    rules:\n      - key: over_auto_refund_limit\n        priority: high\n",
         "points[0].rules[0].priority"),
        ("thresholds:\n  - key: auto_refund_limit\n    value: 500\n    nonsense: 1\n", "thresholds[0]"),
        ("delete:\n  thresholds: [no_such_threshold]\n", "delete.thresholds[0]"),
        ("delete:\n  keyword_lists: [high_risk]\n", "points["),  # a live rule still uses the list
    ],
)  # fmt: skip
def test_an_invalid_partial_gets_the_located_problems(demo, editor, config, located):
    answer = propose(api(editor), config)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_config"), answer.content
    problems = answer.json()["errors"]["config"]
    assert any(p.startswith(located) and "(line " in p for p in problems), problems


def test_a_partial_equal_to_the_live_configuration_is_no_change(demo, editor):
    answer = propose(api(editor), "thresholds:\n  - key: auto_refund_limit\n    value: 500\n")
    assert (answer.status_code, answer.json()["code"]) == (422, "no_changes")

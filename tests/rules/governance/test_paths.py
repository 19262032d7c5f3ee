"""Four-eyes in every path a change can take: YAML import, the admin (form, revert, bulk delete), the API."""

from __future__ import annotations

import io
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config import records
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision, Rule, Threshold
from tests.support import DEMO_TEXT, make_user, reviewed_digest
from tests.support.admin import form_data

RAISED = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")


def _limit():
    return Threshold.objects.get(key="auto_refund_limit").value


# --- import_config ---------------------------------------------------------------------------------------


def _import(path, *args):
    out = io.StringIO()
    call_command("import_config", str(path), "--user", "editor", *args, stdout=out)
    return out.getvalue().splitlines()


def test_import_of_a_high_risk_change_becomes_a_request_and_exits_0(demo, editor, tmp_path):
    path = tmp_path / "raised.yaml"
    path.write_text(RAISED, encoding="utf-8")
    lines = _import(path)
    request = ChangeRequest.objects.get()
    assert lines[-1] == f"change request {request.pk} pending approval"
    assert "needs approval: threshold auto_refund_limit: changes value of a high-risk threshold" in lines
    assert (_limit(), ConfigRevision.objects.count(), request.author) == (500, 1, editor)


def test_import_dry_run_says_which_parts_need_approval_and_writes_nothing(demo, editor, tmp_path):
    path = tmp_path / "raised.yaml"
    path.write_text(RAISED.replace("name: Refund words", "name: Words of refund"), encoding="utf-8")
    lines = _import(path, "--dry-run")
    assert "needs approval: threshold auto_refund_limit: changes value of a high-risk threshold" in lines
    assert lines[-1].startswith("Dry run: 2 change(s) checked; applying them would need a second person's approval")
    assert not ChangeRequest.objects.exists() and _limit() == 500


def test_import_of_a_low_risk_change_applies_at_once(demo, editor, tmp_path):
    path = tmp_path / "renamed.yaml"
    path.write_text(DEMO_TEXT.replace("name: Refund words", "name: Words of refund"), encoding="utf-8")
    assert _import(path)[-1] == "Applied 1 change(s) as revision 2."


# --- the admin -------------------------------------------------------------------------------------------


@pytest.fixture
def editor_client(client, editor):
    client.force_login(editor)
    return client


def test_saving_a_high_risk_threshold_in_the_admin_ends_on_the_request_page(demo, editor, editor_client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    page = editor_client.get(url).content.decode()
    assert "High-risk threshold: changing its value" in page
    data = form_data(editor_client.get(url))
    data.update(value="1000000000", max_value="1000000000", change_reason="no cap")
    response = editor_client.post(url, data, follow=True)
    request = ChangeRequest.objects.get()
    assert response.redirect_chain[-1][0] == reverse("admin:rules_changerequest_change", args=[request.pk])
    body = response.content.decode()
    assert f"It waits in change request {request.pk}" in body
    assert "changes max, value of a high-risk threshold" in body
    assert _limit() == 500
    assert "A change to this record is pending (<a href=" in editor_client.get(url).content.decode()


def test_reverting_a_high_risk_threshold_from_its_history_waits_too(demo, editor, approver, editor_client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    original = threshold.history.get()
    threshold.value = Decimal("800")
    from rules.errors import ApprovalRequired
    from rules.governance.change_requests import change_request_approve

    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="raise")
    change_request_approve(
        request=held.value.change_request, digest=reviewed_digest(held.value.change_request), actor=approver
    )
    url = reverse("admin:rules_threshold_simple_history", args=[threshold.pk, original.history_id])
    response = editor_client.post(url, form_data(editor_client.get(url)))
    revert = ChangeRequest.objects.exclude(pk=held.value.change_request.pk).get()
    assert response["Location"] == reverse("admin:rules_changerequest_change", args=[revert.pk])
    assert (_limit(), revert.changes[0]["after"]["value"]) == (800, 500)


def test_bulk_deleting_a_high_risk_rule_waits(demo, editor, editor_client):
    rule = Rule.objects.get(key="high_risk_keyword")
    url = reverse("admin:rules_rule_changelist")
    response = editor_client.post(url, {"action": "delete_selected", "_selected_action": [rule.pk], "post": "yes"})
    request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("admin:rules_changerequest_change", args=[request.pk])
    assert Rule.objects.filter(pk=rule.pk).exists()
    assert [(r["record"], r["why"]) for r in request.risks] == [
        ("rule intent_routing.high_risk_keyword", "deletes a high-risk rule (a compliance rule)")
    ]


def test_deleting_a_high_risk_rule_from_its_page_waits(demo, editor, editor_client):
    rule = Rule.objects.get(key="over_auto_refund_limit")
    response = editor_client.post(reverse("admin:rules_rule_delete", args=[rule.pk]), {"post": "yes"})
    request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("admin:rules_changerequest_change", args=[request.pk])
    assert Rule.objects.filter(pk=rule.pk).exists()


def test_the_request_page_gives_each_person_their_buttons(demo, editor, approver, client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("700")
    from rules.errors import ApprovalRequired

    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="seasonal")
    request = held.value.change_request
    url = reverse("admin:rules_changerequest_change", args=[request.pk])
    client.force_login(editor)
    mine = client.get(url).content.decode()
    assert 'id="withdraw-form"' in mine and 'id="approve-form"' not in mine
    assert "<td>threshold auto_refund_limit</td><td>value</td>" in mine
    client.force_login(approver)
    theirs = client.get(url).content.decode()
    assert 'id="approve-form"' in theirs and 'id="withdraw-form"' not in theirs
    index = client.get(reverse("admin:index")).content.decode()
    assert re.search(r'id="waiting-for-you"><a [^>]+>1 waiting for your approval', index)
    shown = re.search(r'name="digest" value="([0-9a-f]{64})"', theirs).group(1)
    response = client.post(
        reverse("admin:rules_changerequest_act", args=[request.pk]), {"action": "approve", "digest": shown}
    )
    assert response.status_code == 302 and _limit() == 700
    # The author's own approve button does not exist; a forged post is refused by the service.
    client.force_login(editor)
    threshold.refresh_from_db()
    threshold.value = Decimal("650")
    with pytest.raises(ApprovalRequired) as again:
        records.threshold_save(threshold=threshold, actor=editor, reason="again")
    act = reverse("admin:rules_changerequest_act", args=[again.value.change_request.pk])
    forged = {"action": "approve", "digest": reviewed_digest(again.value.change_request)}
    page = client.post(act, forged, follow=True).content.decode()
    assert "The author of a change request cannot approve it." in page
    assert _limit() == 700


# --- the API ---------------------------------------------------------------------------------------------


def _client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def test_a_high_risk_proposal_over_the_api_is_pending_and_a_low_risk_one_applied(demo, editor):
    api = _client(editor)
    held = api.post("/api/v1/change-requests", {"reason": "raise", "config": RAISED}, format="json")
    assert held.status_code == 201, held.content
    body = held.json()
    assert (body["state"], body["risk"], body["author"], body["base_revision"]) == ("pending", "high", "editor", 1)
    assert {"record": "threshold auto_refund_limit", "field": "value", "before": 500, "after": 99999} in body["diff"]
    assert body["applied_revision"] is None and body["approvals"] == [] and body["superseded_by"] is None
    assert _limit() == 500
    renamed = DEMO_TEXT.replace("name: Refund words", "name: Words of refund")
    applied = api.post("/api/v1/change-requests", {"reason": "wording", "config": renamed}, format="json").json()
    assert (applied["state"], applied["risk"], applied["applied_revision"]) == ("applied", "low", 2)
    same = api.post("/api/v1/change-requests", {"reason": "again", "config": renamed}, format="json")
    assert (same.status_code, same.json()["code"]) == (422, "no_changes")


def test_an_invalid_proposal_gets_the_validators_problems(demo, editor):
    api = _client(editor)
    response = api.post(
        "/api/v1/change-requests", {"reason": "x", "config": "version: 1\nthresholds: 5\n"}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (422, "invalid_config")
    assert response["Content-Type"] == "application/problem+json"
    assert any("thresholds" in problem and "line 2" in problem for problem in response.json()["errors"]["config"])


def test_approving_over_the_api_follows_the_four_eyes_rules(demo, editor, approver):
    editor_api, approver_api = _client(editor), _client(approver)
    request_id = editor_api.post(
        "/api/v1/change-requests", {"reason": "raise", "config": RAISED}, format="json"
    ).json()["id"]
    digest = editor_api.get(f"/api/v1/change-requests/{request_id}").json()["digest"]
    own = editor_api.post(f"/api/v1/change-requests/{request_id}/approve", {"digest": digest}, format="json")
    assert (own.status_code, own.json()["code"]) == (403, "self_approval_forbidden")
    other_editor = make_user("other", "config_editors")
    denied = _client(other_editor).post(
        f"/api/v1/change-requests/{request_id}/approve", {"digest": digest}, format="json"
    )
    assert (denied.status_code, denied.json()["code"]) == (403, "permission_denied")
    done = approver_api.post(
        f"/api/v1/change-requests/{request_id}/approve", {"reason": "ok", "digest": digest}, format="json"
    )
    assert done.status_code == 200 and done.json()["state"] == "applied" and done.json()["applied_revision"] == 2
    assert [a["user"] for a in done.json()["approvals"]] == ["approver"]
    again = approver_api.post(f"/api/v1/change-requests/{request_id}/reject")
    assert (again.status_code, again.json()["code"]) == (409, "not_pending")
    assert _limit() == 99999
    listed = approver_api.get("/api/v1/change-requests?state=applied").json()["change_requests"]
    assert [r["id"] for r in listed] == [request_id]
    assert approver_api.get(f"/api/v1/change-requests/{request_id}").json()["state"] == "applied"


def test_withdraw_and_superseded_over_the_api(demo, editor, approver):
    editor_api, approver_api = _client(editor), _client(approver)
    first = editor_api.post("/api/v1/change-requests", {"reason": "a", "config": RAISED}, format="json").json()["id"]
    second_text = DEMO_TEXT.replace("    value: 500\n", "    value: 600\n")
    second = editor_api.post("/api/v1/change-requests", {"reason": "b", "config": second_text}, format="json").json()[
        "id"
    ]
    approve = {"digest": approver_api.get(f"/api/v1/change-requests/{second}").json()["digest"]}
    assert approver_api.post(f"/api/v1/change-requests/{second}/approve", approve, format="json").json()["state"] == (
        "applied"
    )
    approve = {"digest": approver_api.get(f"/api/v1/change-requests/{first}").json()["digest"]}
    stale = approver_api.post(f"/api/v1/change-requests/{first}/approve", approve, format="json")
    assert (stale.status_code, stale.json()["code"]) == (409, "change_request_superseded")
    assert stale.json()["superseded_by"] == {"record": "threshold auto_refund_limit", "revision": 2}
    third = editor_api.post("/api/v1/change-requests", {"reason": "c", "config": RAISED}, format="json").json()["id"]
    refused = approver_api.post(f"/api/v1/change-requests/{third}/withdraw")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")
    assert editor_api.post(f"/api/v1/change-requests/{third}/withdraw").json()["state"] == "withdrawn"


def test_staff_and_agent_tokens_each_work_only_on_their_own_endpoints(demo, editor):
    _, agent_token = agent_create(name="bot", point_keys=["intent_routing"], actor=None, reason="t")
    agent_api = APIClient()
    agent_api.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token}")
    refused = agent_api.get("/api/v1/change-requests")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")
    staff_api = _client(editor)
    refused = staff_api.get("/api/v1/points")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")
    assert staff_api.get("/api/v1/change-requests").status_code == 200
    assert agent_api.get("/api/v1/points").status_code == 200
    nobody = APIClient().get("/api/v1/change-requests")
    assert (nobody.status_code, nobody.json()["code"]) == (401, "not_authenticated")
    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION="Bearer arbu_not-a-real-token")
    assert forged.get("/api/v1/change-requests").status_code == 401


def test_create_user_token_prints_the_token_last_and_rotates(editor):
    out = io.StringIO()
    call_command("create_user_token", "editor", stdout=out)
    token = out.getvalue().splitlines()[-1]
    assert token.startswith("arbu_")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/v1/change-requests").status_code == 200
    with pytest.raises(Exception, match="already has a token"):
        call_command("create_user_token", "editor", stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_user_token", "editor", "--rotate", stdout=out)
    assert api.get("/api/v1/change-requests").status_code == 401

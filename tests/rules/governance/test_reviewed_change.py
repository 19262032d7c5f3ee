"""An approval is of the change that was reviewed (issue 20, item 2): the author's request shows 555,
the approver reads it, the author edits it to 77777; approving "what I read" is refused and nothing is
applied, approving what it now says works. Through the service (the shell), the staff API and the admin."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from rules.config import records
from rules.config.selectors import config_document
from rules.errors import ApprovalRequired, ChangeRequestChanged
from rules.governance.change_requests import (
    change_request_approve,
    change_request_digest,
    change_request_update,
    config_document_apply,
)
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision, Threshold
from tests.support import reviewed_digest


def _limit() -> Decimal:
    return Threshold.objects.get(key="auto_refund_limit").value


def _propose_555(editor) -> ChangeRequest:
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("555")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="raise the limit to 555")
    return held.value.change_request


def _edit_to_77777(request: ChangeRequest, editor) -> ChangeRequest:
    proposal = config_document_apply(config_document(), request.changes)
    next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 77777
    return change_request_update(request=request, document=proposal, actor=editor)


def _after_values(body_or_rows) -> list:
    return [row["after"] for row in body_or_rows if row["field"] == "value"]


def test_the_digest_is_of_the_change_and_moves_with_every_edit(demo, editor):
    request = _propose_555(editor)
    first = change_request_digest(request.changes)
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert reviewed_digest(request) == first  # the same from the stored row as from the object
    edited = _edit_to_77777(request, editor)
    assert change_request_digest(edited.changes) != first
    back = config_document_apply(config_document(), edited.changes)
    next(t for t in back["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 555
    assert change_request_digest(change_request_update(request=edited, document=back, actor=editor).changes) == first


def test_the_service_refuses_an_approval_of_what_was_edited_since(demo, editor, approver):
    request = _propose_555(editor)
    read = reviewed_digest(request)  # the approver opens it: 555
    edited = _edit_to_77777(request, editor)
    with pytest.raises(ChangeRequestChanged) as refused:
        change_request_approve(request=request, actor=approver, digest=read, reason="reviewed 555")
    assert refused.value.code == "change_request_changed" and refused.value.status == 409
    assert refused.value.extra["digest"] == reviewed_digest(edited)
    assert _after_values(refused.value.extra["diff"]) == [77777]
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert (stored.state, stored.approvals.count(), stored.applied_revision) == ("pending", 0, None)
    assert _limit() == 500 and ConfigRevision.objects.count() == 1  # 77777 is not live
    assert [e.kind for e in stored.events.all()] == ["created", "edited"]  # no approval on record
    done = change_request_approve(request=request, actor=approver, digest=reviewed_digest(edited), reason="77777 ok")
    assert (done.state, done.applied_revision) == ("applied", 2)
    assert _limit() == 77777


def test_an_empty_or_made_up_digest_approves_nothing(demo, editor, approver):
    request = _propose_555(editor)
    for digest in ("", "0" * 64):
        with pytest.raises(ChangeRequestChanged):
            change_request_approve(request=request, actor=approver, digest=digest)
    assert ChangeRequest.objects.get(pk=request.pk).approvals.count() == 0


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


def test_the_api_requires_the_digest_and_refuses_a_stale_one_with_the_current_diff(demo, editor, approver):
    request = _propose_555(editor)
    api = _api(approver)
    url = f"/api/v1/change-requests/{request.pk}"
    read = api.get(url).json()
    assert _after_values(read["diff"]) == [555]
    assert read["digest"] == reviewed_digest(request)
    listed = api.get("/api/v1/change-requests").json()["change_requests"]
    assert [r["digest"] for r in listed] == [read["digest"]]

    missing = api.post(f"{url}/approve", {"reason": "reviewed 555"}, format="json")
    assert missing.status_code == 422 and missing["Content-Type"] == "application/problem+json"
    assert missing.json()["code"] == "invalid_request" and "digest" in missing.json()["errors"]
    assert api.post(f"{url}/approve").status_code == 422  # no body at all: the same

    _edit_to_77777(request, editor)
    stale = api.post(f"{url}/approve", {"digest": read["digest"], "reason": "reviewed 555"}, format="json")
    assert stale.status_code == 409 and stale["Content-Type"] == "application/problem+json"
    problem = stale.json()
    assert problem["code"] == "change_request_changed"
    now = api.get(url).json()
    assert problem["digest"] == now["digest"] != read["digest"]
    assert problem["diff"] == now["diff"] and _after_values(problem["diff"]) == [77777]
    assert (now["state"], now["approvals"], _limit()) == ("pending", [], 500)

    done = api.post(f"{url}/approve", {"digest": problem["digest"], "reason": "77777 ok"}, format="json")
    assert done.status_code == 200, done.content
    assert (done.json()["state"], _limit()) == ("applied", 77777)


def _shown_digest(page: str) -> str:
    return re.search(r'<input type="hidden" name="digest" value="([0-9a-f]{64})">', page).group(1)


def test_the_admin_refuses_an_approval_of_an_edited_request_and_shows_the_current_diff(demo, editor, approver, client):
    request = _propose_555(editor)
    page_url = reverse("admin:rules_changerequest_change", args=[request.pk])
    act = reverse("admin:rules_changerequest_act", args=[request.pk])
    client.force_login(approver)
    seen = client.get(page_url).content.decode()
    assert '<td>value</td><td class="arbiter-before">500</td><td class="arbiter-after">555</td>' in seen
    shown = _shown_digest(seen)

    # The author edits it in the admin (no approvals yet, so nobody is told).
    client.force_login(editor)
    yaml = re.search(r'<textarea name="config"[^>]*>(.*?)</textarea>', client.get(page_url).content.decode(), re.S)
    edited_yaml = html.unescape(yaml.group(1)).replace("value: 555", "value: 77777")
    client.post(act, {"action": "edit", "config": edited_yaml, "reason": "raise the limit"})
    assert _after_values(_rows(request)) == [77777]

    client.force_login(approver)
    answer = client.post(act, {"action": "approve", "digest": shown, "reason": "reviewed 555"}, follow=True)
    text = answer.content.decode()
    assert "Not approved: the request was edited after you opened it." in text
    assert '<td class="arbiter-after">77777</td>' in text  # the page shows what it changes now
    assert _shown_digest(text) == reviewed_digest(request) != shown
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert (stored.state, stored.approvals.count(), _limit()) == ("pending", 0, 500)

    client.post(act, {"action": "approve", "digest": _shown_digest(text), "reason": "77777 ok"})
    assert (ChangeRequest.objects.get(pk=request.pk).state, _limit()) == ("applied", 77777)


def _rows(request: ChangeRequest) -> list[dict]:
    from rules.governance.change_requests import change_request_diff_rows

    return change_request_diff_rows(ChangeRequest.objects.get(pk=request.pk))


def test_break_glass_applies_only_the_change_that_was_shown(demo, editor):
    """Break glass is the other way a held change goes live: it is bound to what was read, too."""
    from django.contrib.auth.models import Permission

    from rules.governance.change_requests import change_request_break_glass
    from tests.support import make_user

    on_call = make_user("on_call", "config_editors")
    on_call.user_permissions.add(Permission.objects.get(codename="break_glass_changerequest"))
    on_call = type(on_call).objects.get(pk=on_call.pk)  # a fresh permission cache
    request = _propose_555(editor)
    read = reviewed_digest(request)
    _edit_to_77777(request, editor)
    with pytest.raises(ChangeRequestChanged):
        change_request_break_glass(request=request, actor=on_call, digest=read, reason="outage")
    stored = ChangeRequest.objects.get(pk=request.pk)
    assert (stored.state, stored.break_glass_by_id) == ("pending", None)
    assert _limit() == 500 and ConfigRevision.objects.count() == 1

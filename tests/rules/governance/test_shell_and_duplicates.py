"""The shell has no login (issue 20, item 6): ``import_config`` makes a change only as a named, active
staff user, and the request's history says it came from the shell. And one change waits in one request:
filing the same change again is ``duplicate_change_request`` naming the open one, from every path."""

from __future__ import annotations

import io
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from rules.config import records
from rules.config.selectors import config_document
from rules.errors import ApprovalRequired, DuplicateChangeRequest
from rules.governance.change_requests import (
    change_request_event_line,
    change_request_propose,
    change_request_update,
    config_document_apply,
)
from rules.governance.tokens import staff_token_create
from rules.models import ChangeRequest, ConfigRevision, Threshold
from tests.support import DEMO_TEXT, make_user

RAISED = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")


def _limit() -> Decimal:
    return Threshold.objects.get(key="auto_refund_limit").value


def _import(path, *args: str) -> list[str]:
    out = io.StringIO()
    call_command("import_config", str(path), *args, stdout=out)
    return out.getvalue().splitlines()


@pytest.fixture
def raised_file(tmp_path):
    path = tmp_path / "raised.yaml"
    path.write_text(RAISED, encoding="utf-8")
    return path


def _nothing_written(before: int) -> None:
    assert ConfigRevision.objects.count() == before and not ChangeRequest.objects.exists()
    assert _limit() == 500


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "Name the staff user the change is made as: --user USERNAME."),
        (("--user", "nobody"), "There is no user 'nobody'."),
        (("--user", "gone"), "User 'gone' is not active."),
        (("--user", "customer"), "User 'customer' is not staff: only staff users make configuration changes."),
        (
            ("--user", "viewer"),
            "User 'viewer' may not propose configuration changes (rules.add_changerequest, config_editors).",
        ),
    ],
)
def test_import_config_needs_an_existing_active_staff_user_who_may_propose(demo, editor, raised_file, args, says):
    make_user("gone", "config_editors", is_active=False)
    customer = make_user("customer", "config_editors")
    customer.is_staff = False
    customer.save()
    make_user("viewer", "risk_approvers")  # staff who may read and approve, not propose
    before = ConfigRevision.objects.count()
    with pytest.raises(CommandError) as refused:
        _import(raised_file, *args)
    assert str(refused.value) == says and "\n" not in says
    assert refused.value.returncode == 1  # what the command line exits with
    _nothing_written(before)


def test_a_dry_run_writes_nothing_and_needs_no_user(demo, editor, raised_file):
    lines = _import(raised_file, "--dry-run")
    assert lines[-1].startswith("Dry run: 1 change(s) checked; applying them would need a second person's approval")
    _nothing_written(1)


def test_a_request_filed_from_the_shell_names_its_user_and_says_it_came_from_the_shell(
    demo, editor, raised_file, client
):
    lines = _import(raised_file, "--user", "editor", "--reason", "raise it")
    request = ChangeRequest.objects.get()
    assert lines[-1] == f"change request {request.pk} pending approval"
    assert (request.author, request.author_name, request.reason) == (editor, "editor", "raise it")
    [created] = request.events.all()
    assert created.params["via"] == "import_config (shell)"
    assert change_request_event_line(created)["via"] == "import_config (shell)"
    client.force_login(make_user("boss", "risk_approvers"))
    page = client.get(reverse("admin:rules_changerequest_change", args=[request.pk])).content.decode()
    assert re.search(r"editor: created \(1 record\(s\); needs approval\) · via import_config \(shell\)", page)


def test_the_same_import_twice_files_one_request(demo, editor, raised_file):
    _import(raised_file, "--user", "editor")
    first = ChangeRequest.objects.get()
    with pytest.raises(CommandError) as refused:
        _import(raised_file, "--user", "editor")
    assert str(refused.value) == (
        f"change request {first.pk} (pending) already proposes exactly this change; nothing was filed."
    )
    assert ChangeRequest.objects.count() == 1


def test_the_api_refuses_a_duplicate_naming_the_open_request(demo, editor):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    first = api.post("/api/v1/change-requests", {"reason": "raise", "config": RAISED}, format="json")
    assert first.status_code == 201
    again = api.post("/api/v1/change-requests", {"reason": "raise again", "config": RAISED}, format="json")
    assert again.status_code == 409 and again["Content-Type"] == "application/problem+json"
    assert again.json()["code"] == "duplicate_change_request"
    assert again.json()["change_request"] == first.json()["id"]
    assert ChangeRequest.objects.count() == 1


def test_the_admin_gate_sends_a_duplicate_to_the_open_request(demo, editor, client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("700")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="first")
    open_request = held.value.change_request
    client.force_login(editor)
    from tests.support.admin import form_data

    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    data = form_data(client.get(url))
    data.update({"value": "700", "change_reason": "the same again"})
    answer = client.post(url, data)
    assert answer.status_code == 302
    assert answer.url == reverse("admin:rules_changerequest_change", args=[open_request.pk])
    page = client.get(answer.url).content.decode()
    assert f"Nothing was changed: change request {open_request.pk} already proposes exactly this change." in page
    assert ChangeRequest.objects.count() == 1 and _limit() == 500


def test_a_duplicate_is_refused_by_the_service_whatever_the_path(demo, editor):
    first = change_request_propose(document=_raised(99999), actor=editor, reason="a")
    with pytest.raises(DuplicateChangeRequest) as refused:
        change_request_propose(document=_raised(99999), actor=editor, reason="b")
    assert refused.value.change_request.pk == first.pk and refused.value.status == 409
    second = change_request_propose(document=_raised(88888), actor=editor, reason="c")
    with pytest.raises(DuplicateChangeRequest):  # editing one into the other is the same thing
        change_request_update(request=second, document=_raised(99999), actor=editor)
    assert ChangeRequest.objects.get(pk=second.pk).changes[0]["after"]["value"] == 88888
    ChangeRequest.objects.filter(pk=first.pk).update(state="withdrawn")  # closed: no longer in the way
    assert change_request_propose(document=_raised(99999), actor=editor, reason="d").state == "pending"


def _raised(value: int) -> dict:
    document = config_document_apply(config_document(), [])
    next(t for t in document["thresholds"] if t["key"] == "auto_refund_limit")["value"] = value
    return document


def test_history_lines_are_in_the_readers_language(demo, editor, approver, client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("700")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="r")
    request = held.value.change_request
    proposal = config_document_apply(config_document(), request.changes)
    next(t for t in proposal["thresholds"] if t["key"] == "auto_refund_limit")["value"] = 800
    change_request_update(request=request, document=proposal, actor=editor)
    lines = [change_request_event_line(e) for e in request.events.all()]
    assert [(line["kind"], line["detail"]) for line in lines] == [
        ("created", "1 record(s); needs approval"),
        ("edited", "no approvals to withdraw"),
    ]  # in English by default (the test settings' LANGUAGE_CODE)
    with translation.override("zh-hans"):
        chinese = [change_request_event_line(e) for e in request.events.all()]
    assert all(line["kind"] != english["kind"] for line, english in zip(chinese, lines, strict=True))
    assert all(line["detail"] != english["detail"] for line, english in zip(chinese, lines, strict=True))
    client.force_login(approver)
    page = client.get(
        reverse("admin:rules_changerequest_change", args=[request.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    events = re.search(r'<ul id="events">(.*?)</ul>', page, re.S).group(1)
    for english in ("created", "edited", "needs approval", "no approvals to withdraw"):
        assert english not in events


def test_history_rows_from_before_stay_readable(demo, editor):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    threshold.value = Decimal("700")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="r")
    old = held.value.change_request.events.create(kind="approved", user_name="li", detail="checked with finance")
    translation.activate("en")
    assert change_request_event_line(old) == {
        "kind": "approved",
        "detail": "checked with finance",
        "via": "",
        "who": "li",
    }
    legacy = held.value.change_request.events.create(kind="legacy_kind", detail="as it was written")
    assert change_request_event_line(legacy)["kind"] == "legacy_kind"
    assert change_request_event_line(legacy)["detail"] == "as it was written"

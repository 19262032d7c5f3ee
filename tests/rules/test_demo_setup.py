from __future__ import annotations

import io
import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from rules.config import records
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_approve
from rules.models import OPEN_STATES, ChangeRequest, ConfigRevision, McpServer, Threshold, ToolContract
from tests.support import approved, reviewed_digest

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("demo_setup", *args, stdout=out)
    return out.getvalue()


def test_demo_setup_loads_once_then_keeps_operators_changes_until_reset():
    first = run()
    assert "loaded as revision 1" in first
    assert "Agent token:  arb_" in first and "password " in first
    assert ConfigRevision.objects.get().created_by.username == "admin"

    # A high-risk tuning, approved by the second person demo_setup made.
    approver = get_user_model().objects.get(username="approver")
    limit = Threshold.objects.get(key="min_confidence")
    limit.value = Decimal("0.7")
    approved(lambda: records.threshold_save(threshold=limit, actor=None, reason="ops tuning"), approver=approver)
    again = run()
    assert "keeping it" in again
    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.7")

    # Putting the high-risk value back waits for the approver too; once approved, the demo is back.
    run("--reset")
    [waiting] = ChangeRequest.objects.filter(state__in=OPEN_STATES)
    change_request_approve(request=waiting, actor=approver, digest=reviewed_digest(waiting))
    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.65")
    assert run().count("already loaded") == 1


def _password(output: str, username: str) -> str:
    [password] = re.findall(rf"user {username}  password (\S+)", output)
    return password


def test_demo_setup_prints_a_second_person_who_approves():
    output = run()
    approver = get_user_model().objects.get(username="approver")
    assert approver.check_password(_password(output, "approver"))
    assert approver.is_staff and not approver.is_superuser
    assert approver.has_perm("rules.approve_changerequest")
    assert list(approver.groups.values_list("name", flat=True)) == ["risk_approvers"]
    # Run again: the same two accounts, fresh passwords.
    again = run()
    approver.refresh_from_db()
    assert approver.check_password(_password(again, "approver"))
    assert get_user_model().objects.filter(username__in=["admin", "approver"]).count() == 2


def test_reset_withdraws_the_admins_open_requests_and_leaves_the_approver_one_to_approve():
    run()
    admin = get_user_model().objects.get(username="admin")
    limit = Threshold.objects.get(key="auto_refund_limit")
    limit.value = Decimal("900")
    with pytest.raises(ApprovalRequired) as waiting:
        records.threshold_save(threshold=limit, actor=admin, reason="raise the limit")
    stale = waiting.value.change_request

    output = run("--reset")
    stale.refresh_from_db()
    assert stale.state == "withdrawn"
    assert f"Withdrew change request {stale.pk}" in output
    # Nothing high-risk was applied, so putting the demo back changes nothing and nothing waits.
    assert list(ChangeRequest.objects.filter(state__in=OPEN_STATES)) == []
    assert "already loaded" in output or "loaded as revision" in output


def test_demo_setup_refuses_one_account_for_both_roles():
    with pytest.raises(CommandError, match="another account"):
        run("--approver", "admin")


def test_demo_setup_points_the_orders_mcp_server_where_it_is_told():
    run("--orders-url", "http://127.0.0.1:9911/mcp")

    assert McpServer.objects.get(name="orders").url == "http://127.0.0.1:9911/mcp"
    assert ToolContract.objects.filter(name__startswith="orders.").count() == 3


def test_demo_setup_without_an_orders_url_keeps_the_file_s():
    run()

    assert McpServer.objects.get(name="orders").url == "http://127.0.0.1:8765/mcp"

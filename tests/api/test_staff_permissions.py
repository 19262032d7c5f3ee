"""Each staff read asks for the permission its admin page asks for: a staff token alone says who
calls, not what they may read. Over the HTTP layer, with a staff user holding nothing, then only the
one permission the read needs."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from rules.config.document.validate import config_from_yaml
from rules.governance.admin.simulator import SIMULATOR_PERMISSION
from rules.governance.change_requests import change_request_propose
from rules.governance.tokens import staff_token_create
from tests.support import DEMO_TEXT, load_demo


def _staff(username: str, *permissions: str) -> APIClient:
    user = get_user_model().objects.create_user(username=username, password=f"pw-{username}-123", is_staff=True)
    for dotted in permissions:
        app_label, codename = dotted.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=user)}")
    return api


@pytest.fixture
def request_id(staff_user) -> int:
    load_demo()
    raised = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")
    return change_request_propose(document=config_from_yaml(raised), actor=staff_user, reason="raise").pk


READS = [
    ("change request list", "rules.view_changerequest", "get", "/api/v1/change-requests", None),
    ("change request detail", "rules.view_changerequest", "get", "/api/v1/change-requests/{id}", None),
    (
        "simulator",
        SIMULATOR_PERMISSION,
        "post",
        "/api/v1/simulations",
        {"point": "refund_approval", "facts": {"refund_amount": 20}},
    ),
    ("human queue", "agents.view_session", "get", "/api/v1/queue", None),
    ("decision-point map", "rules.view_decisionrecord", "get", "/api/v1/reports/decision-map", None),
    ("decision-point map as CSV", "rules.view_decisionrecord", "get", "/api/v1/reports/decision-map.csv", None),
]


@pytest.mark.parametrize(("name", "permission", "method", "path", "body"), READS, ids=[r[0] for r in READS])
def test_a_staff_read_needs_the_permission_of_its_admin_page(request_id, name, permission, method, path, body):
    url = path.format(id=request_id)
    call = {"format": "json", "data": body} if body is not None else {}
    refused = getattr(_staff("nobody"), method)(url, **call)
    assert refused.status_code == 403, refused.content
    assert refused["Content-Type"].startswith("application/problem+json")
    assert refused.json()["code"] == "permission_denied"
    assert permission in refused.json()["detail"]
    allowed = getattr(_staff("reader", permission), method)(url, **call)
    assert allowed.status_code == 200, allowed.content

"""The rule simulator page: the why panel under one or two configurations, nothing logged, and saving the
request as a regression case."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse

from rules.config.document.validate import config_from_yaml
from rules.governance.change_requests import change_request_propose
from rules.models import RegressionCase
from tests.support import DEMO_TEXT

URL = "admin:rules_decisionrecord_simulator"
LIMIT_99999 = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")


@pytest.fixture
def pending(demo, editor):
    return change_request_propose(document=config_from_yaml(LIMIT_99999), actor=editor, reason="raise")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(**more) -> dict:
    return {"point": "refund_approval", "facts": '{"refund_amount": 800}', "candidate_mode": "none", **more}


def test_two_configurations_side_by_side_and_nothing_is_logged(editor, pending):
    rows = lambda: {m._meta.label: m._default_manager.count() for m in apps.get_models()}  # noqa: E731
    client = browser(editor)
    assert client.get(reverse(URL)).status_code == 200  # the login's session row exists from here
    before = rows()
    html = client.post(reverse(URL), form(under="current", compare=f"cr{pending.pk}")).content.decode()
    assert rows() == before
    assert html.count('class="arbiter-sim-side"') == 2
    assert "Under revision 1: <strong" in html and "human_handoff" in html
    assert f"Under change request #{pending.pk} (on revision 1)" in html and "auto_approve" in html
    assert "over_auto_refund_limit" in html  # the why panel's matched rules
    assert "simulated under revision 1" in html


def test_form_problems_are_shown(editor, demo):
    html = browser(editor).post(reverse(URL), form(facts="{nope")).content.decode()
    assert "Not JSON" in html and 'class="arbiter-sim-side"' not in html
    for unreadable in ('{"refund_amount": ' + "9" * 5000 + "}", '{"refund_amount": NaN}', "[" * 100_000):
        answer = browser(editor).post(reverse(URL), form(facts=unreadable))
        assert answer.status_code == 200
        assert "Not JSON a decision can use" in answer.content.decode()
    html = browser(editor).post(reverse(URL), form(facts='{"refund_amount": "many"}')).content.decode()
    assert "Some facts do not fit the decision point." in html


def test_save_as_a_regression_case(editor, demo):
    client = browser(editor)
    body = form(input="我的电话 13800138000", expected="human_handoff", note="over the limit", save_case="1")
    html = client.post(reverse(URL), body, follow=True).content.decode()
    case = RegressionCase.objects.get()
    assert f"Saved as regression case {case.pk}" in html
    assert (case.point, case.expected, case.facts, case.decision_id) == (
        "refund_approval",
        "human_handoff",
        {"refund_amount": 800},
        None,
    )
    assert "13800138000" not in case.input  # masked as the log masks it


def test_the_page_needs_the_permission(demo, editor, django_user_model):
    nobody = django_user_model.objects.create_user(username="nobody", password="pw-nobody-1", is_staff=True)
    assert browser(nobody).get(reverse(URL)).status_code == 403

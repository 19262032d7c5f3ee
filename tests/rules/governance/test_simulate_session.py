"""The simulator with rules that read the session: fields and the keyword lists of the session's latest
decisions typed in (API and admin page), decided as a decide with such a session would be."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from rules.governance.tokens import staff_token_create
from rules.models import DecisionRecord, RegressionCase
from tests.support.session_rules import session_rules_import

URL = "admin:rules_decisionrecord_simulator"


@pytest.fixture
def staff(db, editor) -> APIClient:
    session_rules_import()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {staff_token_create(user=editor)}")
    return api


def simulate(api: APIClient, **body):
    return api.post("/api/v1/simulations", {"point": "address_check", **body}, format="json")


def test_the_api_takes_session_fields_and_history(staff):
    plain = simulate(staff)
    assert plain.status_code == 200, plain.json()
    assert plain.json()["rule"]["key"] == "no_phone"
    phone = simulate(staff, session_fields={"receiver_phone": "13800138000"})
    assert phone.json()["rule"]["key"] == "phone_ready"
    assert "13800138000" not in phone.json()["reason"]
    retries = simulate(staff, session_fields={"retry_count": 4})
    assert retries.json()["reason"] == "too_many_retries: session field retry_count 4 >= max_retries 3"
    seen = simulate(staff, session_state="collecting_params", session_history=[[], ["complaint"]])
    assert seen.json()["rule"]["key"] == "complained_before"
    # Three decisions back is beyond the rule's window; a value of another type than declared never holds.
    assert simulate(staff, session_state="collecting_params", session_history=[[], [], [], ["complaint"]]).json()[
        "rule"
    ]["key"] == ("no_phone")
    assert simulate(staff, session_fields={"retry_count": "4"}).json()["rule"]["key"] == "no_phone"
    assert not DecisionRecord.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_fields": ["receiver_phone"]}, "session_fields"),
        ({"session_history": [["complaint"]] * 51}, "session_history"),
        ({"session_history": ["complaint"]}, "session_history"),
    ],
)
def test_malformed_session_inputs_are_refused_by_field(staff, body, field):
    answer = simulate(staff, **body)
    assert answer.status_code == 422, answer.json()
    assert answer["Content-Type"] == "application/problem+json"
    assert field in answer.json()["errors"]


def test_the_admin_page_takes_them_and_keeps_them_in_a_regression_case(editor, staff):
    client = Client()
    client.force_login(editor)
    form = {
        "point": "address_check",
        "candidate_mode": "none",
        "session_state": "collecting_params",
        "session_fields": '{"retry_count": 1}',
        "session_history": "\ncomplaint, other\n",
    }
    html = client.post(reverse(URL), form).content.decode()
    assert "complained_before" in html and "keyword list complaint seen in the last 3 decisions" in html
    html = client.post(reverse(URL), {**form, "session_fields": "[1]"}).content.decode()
    assert "A JSON object" in html
    saved = client.post(reverse(URL), {**form, "expected": "human_handoff", "save_case": "1"}, follow=True)
    assert saved.status_code == 200
    case = RegressionCase.objects.get()
    assert case.session_read == {"fields": {"retry_count": 1}, "recent": [[], ["complaint", "other"]]}


def test_a_case_whose_rule_reads_a_masked_field_is_refused(editor, staff):
    client = Client()
    client.force_login(editor)
    form = {
        "point": "address_check",
        "candidate_mode": "none",
        "session_fields": '{"receiver_phone": "13800138000"}',
        "expected": "proceed",
        "save_case": "1",
    }
    html = client.post(reverse(URL), form, follow=True).content.decode()
    assert "read the session field receiver_phone, masked in the log" in html
    assert not RegressionCase.objects.exists()

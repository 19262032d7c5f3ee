"""A machine's field declarations in the admin: shown and edited as YAML, refused with the validator's words."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from tests.support.admin import build_config, form_data

pytestmark = pytest.mark.django_db

FIELDS_YAML = """\
- name: phone
  type: string
  pattern: ^1[3-9]\\d{9}$
  normalize: [digits]
  required_in: [collecting]
  pii: true
- name: retry_count
  type: integer
  min: 0
  max: 3
  default: 0
"""


@pytest.fixture
def config(actor):
    return build_config(actor)


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def test_fields_are_edited_as_yaml_with_who_and_why(admin_client_, config, staff_user):
    # No high-risk rule of the test configuration sends sessions to "collecting": this applies at once.
    machine = config["machine"]
    url = reverse("admin:rules_statemachine_change", args=[machine.pk])
    data = form_data(admin_client_.get(url))
    assert data["fields"] == ""
    data.update(fields=FIELDS_YAML, change_reason="Collect the phone")
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine.refresh_from_db()
    assert [f["name"] for f in machine.fields] == ["phone", "retry_count"]
    assert machine.fields[0]["pattern"] == r"^1[3-9]\d{9}$"
    record = machine.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason, record.fields) == (
        staff_user,
        "Collect the phone",
        machine.fields,
    )
    # Shown again as the YAML it reads back from.
    assert form_data(admin_client_.get(url))["fields"].startswith("- name: phone\n  type: string\n")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("- name: phone\n  type: phone", "phone type: The type must be one of"),
        ("- name: phone\n  type: string\n  required_in: [handoff]", "must always be able to enter handoff"),
        ("- name: phone\n  type: string\n  pattern: '('", "Not a valid regular expression"),
        ("- name: phone\n  type: [", "Line 2: this is not YAML the form can read."),
        ("name: phone", "Write the fields as a YAML list"),
    ],
)
def test_bad_declarations_are_refused_on_the_form(admin_client_, config, fields, message):
    machine = config["machine"]
    url = reverse("admin:rules_statemachine_change", args=[machine.pk])
    data = form_data(admin_client_.get(url))
    data.update(fields=fields, change_reason="Try")
    history_before = machine.history.count()
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.errors["fields"])
    assert machine.history.count() == history_before


def test_the_fields_are_labelled_in_chinese(admin_client_, config):
    url = reverse("admin:rules_statemachine_change", args=[config["machine"].pk])
    with translation.override("zh-hans"):
        html = admin_client_.get(url, headers={"accept-language": "zh-hans"}).content.decode()
    assert "What sessions hold, as a YAML list" not in html

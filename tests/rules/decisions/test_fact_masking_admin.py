"""Fact masking in the admin: the point form's settings, the why panel's record of what was masked, and
the replay page saying why a replay on a masked fact is not identical."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from rules.models import DecisionRecord
from tests.support.admin import build_config, form_data
from tests.support.masking import ADDRESS, PHONE, masking_agent_api

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(db):
    """An agent's API client on the demo with the fact-masking points (as decisions/api/test_fact_masking.py)."""
    return masking_agent_api()


@pytest.fixture
def admin_client_(staff_user) -> Client:
    admin = Client()
    admin.force_login(staff_user)
    return admin


@pytest.mark.applies_config_at_once(
    reason="tests the point form's masking fields on a configuration built step by step"
)
def test_the_point_form_sets_fact_paths_and_the_opt_out(admin_client_, actor):
    point = build_config(actor)["point"]
    url = reverse("admin:rules_decisionpoint_change", args=[point.pk])
    data = form_data(admin_client_.get(url))
    assert data["mask_facts"] == "on" and data["mask_fact_paths"] == ""
    data.update(mask_fact_paths="customer_tier")
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    point.refresh_from_db()
    assert (point.mask_fact_paths, point.mask_facts) == (["customer_tier"], True)

    data.pop("mask_facts")  # unticked, with a path still listed: refused, the path would do nothing
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert "does not mask its facts" in " ".join(response.context["adminform"].form.errors["mask_fact_paths"])
    data.update(mask_fact_paths="")
    assert admin_client_.post(url, data).status_code == 302
    point.refresh_from_db()
    assert (point.mask_fact_paths, point.mask_facts) == ([], False)


def test_the_why_panel_and_the_replay_page_say_what_was_masked(admin_client_, client):
    made = client.post(
        "/api/v1/decisions",
        {"point": "contact_check", "facts": {"address": ADDRESS, "note": f"call {PHONE}"}},
        format="json",
    )
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    html = admin_client_.get(reverse("admin:rules_decisionrecord_change", args=[record.pk])).content.decode()
    assert ADDRESS not in html and PHONE not in html
    panel = html[html.index('id="masked-facts"') :][:400]
    assert "<strong>address</strong>: the whole value" in panel and "<strong>note</strong>: phone" in panel
    replay = admin_client_.get(reverse("admin:rules_decisionrecord_replay", args=[record.pk])).content.decode()
    assert "identical: no" in replay and "rules read address, masked in the log" in replay

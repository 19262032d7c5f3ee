"""A machine's page in the admin with fields, events and guards: the form shows them as YAML and the picture
marks what each state requires and which events take each move (tests/agents/test_diagram.py draws the
picture itself)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.admin import form_data
from tests.support.field_sessions import address_machine_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def picture(html: str) -> str:
    begin = html.index('class="arbiter-machine"')
    return html[begin : html.index("</svg>", begin)]


def test_the_form_shows_fields_events_and_guards_and_the_picture_marks_them(admin_client_, actor):
    machine = address_machine_save(actor=actor)
    response = admin_client_.get(reverse("admin:rules_statemachine_change", args=[machine.pk]))
    data = form_data(response)
    assert data["fields"].startswith("- name: receiver_phone\n")
    assert "- name: confirm\n" in data["events"] and "clarification_required" in data["events"]
    assert data["guards"].startswith("clarify:\n  executing:\n    requires_fields:")
    svg = picture(response.content.decode())
    assert re.search(r'<g class="state needs" data-state="executing">', svg)
    assert '<text class="needs"' in svg and "needs receiver_phone, new_address</text>" in svg
    edge = re.search(r'<g class="edge labelled" data-from="clarify" data-to="executing">.*?</g>', svg, re.S).group(0)
    assert ">confirm [fields new_address]</text>" in edge
    assert re.search(r'data-from="collecting_params" data-to="clarify">.*?>clarification_required</text>', svg, re.S)


def test_the_picture_speaks_chinese(admin_client_, actor):
    machine = address_machine_save(actor=actor)
    admin_client_.cookies["django_language"] = "zh-hans"
    svg = picture(admin_client_.get(reverse("admin:rules_statemachine_change", args=[machine.pk])).content.decode())
    assert "needs receiver_phone" not in svg and "fields new_address" not in svg
    assert "需要 receiver_phone, new_address</text>" in svg
    assert "进入前须有的字段：receiver_phone, new_address" in svg

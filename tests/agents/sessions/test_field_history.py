"""A session's fields with their history: the selector (``session_fields_with_history``) and the session's
admin page. Sessions are built through the HTTP API (tests.support.field_sessions); personal data must
never reach the page, whatever the moves recorded and however the machine changed since."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from agents.sessions.models import Session, Transition
from agents.sessions.selectors import session_fields_with_history
from tests.support import agent_api
from tests.support.field_sessions import PHONE, address_machine_save, session_with_field_history

pytestmark = pytest.mark.django_db

MASKED = "[masked]"


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def by_name(session: Session) -> dict:
    return {f.name: f for f in session_fields_with_history(session)}


def changes(field) -> list[tuple]:
    return [
        (c.seq, c.kind, c.actor, c.from_state, c.to_state, c.old_known, c.old, c.new, c.cleared) for c in field.history
    ]


def page(client: Client, session: Session) -> str:
    response = client.get(reverse("admin:agents_session_change", args=[session.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_each_field_has_its_value_and_the_moves_that_changed_it(actor):
    _, session = session_with_field_history(actor=actor)
    fields = by_name(session)
    assert list(fields) == ["receiver_phone", "new_address", "note"]  # the declaration's order

    phone = fields["receiver_phone"]
    assert (phone.present, phone.value, phone.pii, phone.type) == (True, MASKED, True, "string")
    assert phone.required_in == ("executing",) and not phone.missing_here
    assert changes(phone) == [
        (1, "fields", "address_bot", "collecting_params", "collecting_params", True, None, MASKED, False)
    ]

    address = fields["new_address"]
    assert address.value == "杭州市滨江区"
    assert changes(address) == [
        (2, "fields", "address_bot", "collecting_params", "collecting_params", True, None, "杭州市西湖区", False),
        (3, "move", "address_bot", "collecting_params", "executing", True, "杭州市西湖区", "杭州市滨江区", False),
    ]

    note = fields["note"]
    assert (note.present, note.value, note.required_in) == (False, None, ())
    assert [(c.seq, c.old, c.new, c.cleared) for c in note.history] == [
        (1, None, "call after 6pm", False),
        (2, "call after 6pm", "after 7pm", False),
        (4, "after 7pm", None, True),
    ]


def test_a_field_made_personal_data_later_is_masked_in_its_history_too(actor, admin_client_):
    _, session = session_with_field_history(actor=actor)
    # The moves recorded the note in clear (it was not personal data then): the page must not show it now.
    assert Transition.objects.get(session=session, seq=1).fields_changed["note"] == "call after 6pm"
    fields = [dict(f) for f in address_machine_save(actor=actor).fields]
    for field in fields:
        if field["name"] in ("note", "new_address"):
            field["pii"] = True
    address_machine_save(actor=actor, fields=fields)
    session = Session.objects.get(pk=session.pk)
    shown = by_name(session)
    assert shown["new_address"].value == MASKED
    assert [(c.old, c.new) for c in shown["new_address"].history] == [(None, MASKED), (MASKED, MASKED)]
    # A cleared value stays visibly cleared: that it was cleared is no personal data.
    assert [(c.old, c.new, c.cleared) for c in shown["note"].history] == [
        (None, MASKED, False),
        (MASKED, MASKED, False),
        (MASKED, None, True),
    ]
    # Nowhere on the page: not in the fields table, not in the timeline's moves.
    html = page(admin_client_, session)
    for clear in ("call after 6pm", "after 7pm", "杭州市西湖区", "杭州市滨江区"):
        assert clear not in html, clear


def test_a_field_the_machine_no_longer_declares_is_listed_last_and_masked(actor):
    _, session = session_with_field_history(actor=actor)
    kept = [f for f in address_machine_save(actor=actor).fields if f["name"] != "new_address"]
    address_machine_save(actor=actor, fields=kept, guards={})  # its guard named it
    shown = session_fields_with_history(Session.objects.get(pk=session.pk))
    assert [f.name for f in shown] == ["receiver_phone", "note", "new_address"]
    gone = shown[-1]
    assert (gone.declared, gone.value, gone.type) == (False, MASKED, "")
    assert [(c.old, c.new) for c in gone.history] == [(None, MASKED), (MASKED, MASKED)]


def test_only_the_latest_moves_are_read_and_an_older_value_is_not_guessed(actor):
    _, session = session_with_field_history(actor=actor)
    note = {f.name: f for f in session_fields_with_history(session, limit=2)}["note"]
    # Moves 3 and 4 are read; the note's change at 4 replaced a value move 2 set: unknown here.
    assert [(c.seq, c.old_known, c.old) for c in note.history] == [(4, False, None)]


def test_a_session_of_a_machine_without_fields_has_none(admin_client_, api_demo_session):
    assert session_fields_with_history(api_demo_session) == []
    assert "The machine declares no fields and the session holds none." in page(admin_client_, api_demo_session)


@pytest.fixture
def api_demo_session(demo, actor) -> Session:
    api = agent_api("support_bot", actor=actor)
    assert (
        api.post("/api/v1/sessions", {"machine": "after_sales", "session_id": "plain"}, format="json").status_code
        == 201
    )
    return Session.objects.get(key="plain")


# --- the admin page ---------------------------------------------------------------------------------------


def test_the_session_page_shows_each_field_with_its_history_and_never_the_phone(admin_client_, actor):
    _, session = session_with_field_history(actor=actor)
    html = page(admin_client_, session)
    assert PHONE not in html and "138-0013-8000" not in html  # not in the fields table, the timeline or the record
    table = html[html.index('id="session-fields"') : html.index('id="session-timeline"')]
    rows = re.findall(r'<tr class="arbiter-field" data-field="(\w+)">', table)
    assert rows == ["receiver_phone", "new_address", "note"]
    phone = table[table.index('data-field="receiver_phone"') : table.index('data-field="new_address"')]
    assert "personal data" in phone and "required to enter executing" in phone
    assert f"<code>{MASKED}</code>" in phone and "#1 by address_bot" in phone
    address = table[table.index('data-field="new_address"') : table.index('data-field="note"')]
    # Latest first: the event's move, with its states, then the PATCH.
    seqs = re.findall(r'<li data-seq="(\d+)">', address)
    assert seqs == ["3", "2"]
    assert "<code>杭州市西湖区</code> → <code>杭州市滨江区</code>" in address
    assert "(collecting_params → executing)" in address and "#3 by address_bot" in address
    note = table[table.index('data-field="note"') :]
    assert "not set" in note and "<em>cleared</em>" in note and "fields updated" in note


def test_field_names_and_values_are_escaped(admin_client_, actor):
    _, session = session_with_field_history(actor=actor, note="<script>alert('note')</script>")
    # A name no declaration could hold (keys are [a-z0-9_]): stored as if left by an older release, to
    # show the page escapes names as well as values.
    Session.objects.filter(pk=session.pk).update(field_values={**session.field_values, "<script>x</script>": 1})
    Transition.objects.filter(session=session, seq=4).update(fields_changed={"<img src=x onerror=alert(1)>": "v"})
    html = page(admin_client_, session)
    assert "<script>alert('note')</script>" not in html and "<script>x</script>" not in html
    assert "<img src=x" not in html
    table = html[html.index('id="session-fields"') : html.index('id="session-timeline"')]
    assert "&lt;script&gt;alert(&#x27;note&#x27;)&lt;/script&gt;" in table
    assert 'data-field="&lt;script&gt;x&lt;/script&gt;"' in table
    assert "&lt;img src=x onerror=alert(1)&gt;" in table


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_fields_table_speaks_the_operators_language(admin_client_, actor, language):
    _, session = session_with_field_history(actor=actor)
    admin_client_.cookies["django_language"] = language
    html = page(admin_client_, session)
    words = {"en": ("Fields", "personal data", "cleared"), "zh-hans": ("字段", "个人数据", "已清除")}[language]
    table = html[html.index('id="session-fields-module"') : html.index('id="session-timeline"')]
    for word in words:
        assert word in table, word

"""Admin for agent runtimes and state machines, through Django's test client on a real database."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import token_hash
from rules.models import ConfigRevision, StateMachine
from tests.support.admin import build_config, form_data, messages_of

TOKEN = re.compile(r"arb_[A-Za-z0-9_\-]{20,}")


@pytest.fixture
def config(actor):
    return build_config(actor)


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def _all_stored_text() -> str:
    """Every agent-runtime column and history column, to prove the token itself is stored nowhere."""
    rows = list(AgentRuntime.objects.values()) + list(AgentRuntime.history.values())
    revisions = list(ConfigRevision.objects.values_list("snapshot", flat=True))
    return repr(rows) + repr(revisions)


@pytest.mark.django_db
def test_adding_an_agent_shows_its_token_once_and_stores_only_the_hash(admin_client_, config, staff_user):
    url = reverse("admin:agents_agentruntime_add")
    data = form_data(admin_client_.get(url))
    data.update(
        name="billing_bot",
        description="Answers billing questions",
        points=[str(config["point"].pk)],
        change_reason="New billing agent",
    )
    response = admin_client_.post(url, data, follow=True)
    assert response.status_code == 200
    tokens = TOKEN.findall(response.content.decode())
    assert len(set(tokens)) == 1
    token = tokens[0]
    agent = AgentRuntime.objects.get(name="billing_bot")
    assert agent.token_hash == token_hash(token)
    assert token.startswith(agent.token_prefix)
    assert agent.description == "Answers billing questions"
    assert list(agent.points.values_list("key", flat=True)) == ["refund_approval"]
    assert token not in _all_stored_text()
    record = agent.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "New billing agent")
    # Never again: not on the change page, the list or the history.
    for page in ("change", "history"):
        body = admin_client_.get(reverse(f"admin:agents_agentruntime_{page}", args=[agent.pk])).content.decode()
        assert token not in body
        assert not TOKEN.search(body.replace(agent.token_prefix + "…", ""))
    assert token not in admin_client_.get(reverse("admin:agents_agentruntime_changelist")).content.decode()


@pytest.mark.django_db
def test_an_agent_with_a_taken_name_is_refused_on_the_form(admin_client_, config):
    url = reverse("admin:agents_agentruntime_add")
    data = form_data(admin_client_.get(url))
    data.update(name="support_bot")
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert AgentRuntime.objects.count() == 1


@pytest.mark.django_db
def test_rotating_a_token_shows_the_new_one_once(admin_client_, config, staff_user):
    agent = config["agent"]
    old_hash = agent.token_hash
    response = admin_client_.post(
        reverse("admin:agents_agentruntime_changelist"),
        {"action": "rotate_token", "_selected_action": [str(agent.pk)]},
    )
    assert response.status_code == 302
    shown = " ".join(messages_of(response))
    token = TOKEN.search(shown).group(0)
    agent.refresh_from_db()
    assert agent.token_hash == token_hash(token) != old_hash
    assert token not in _all_stored_text()
    record = agent.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "Token rotated in admin")


@pytest.mark.django_db
def test_changing_an_agents_points_goes_through_the_service(admin_client_, config, staff_user):
    agent = config["agent"]
    url = reverse("admin:agents_agentruntime_change", args=[agent.pk])
    data = form_data(admin_client_.get(url))
    assert "token_hash" not in data
    data.update(points=[], is_active="", change_reason="Paused")
    before = ConfigRevision.objects.count()
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    agent.refresh_from_db()
    assert list(agent.points.all()) == []
    assert agent.is_active is False
    assert ConfigRevision.objects.count() <= before + 1
    record = agent.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "Paused")


@pytest.mark.django_db
def test_agents_cannot_be_deleted_only_deactivated(admin_client_, config):
    agent = config["agent"]
    assert admin_client_.get(reverse("admin:agents_agentruntime_delete", args=[agent.pk])).status_code == 403
    response = admin_client_.post(
        reverse("admin:agents_agentruntime_changelist"),
        {"action": "deactivate", "_selected_action": [str(agent.pk)]},
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.is_active is False


@pytest.mark.django_db
@pytest.mark.applies_config_at_once(
    reason="tests the machine form's lines; machine edits through approval: tests/rules/governance"
)
def test_state_machine_is_edited_as_lines(admin_client_, config, staff_user):
    machine = config["machine"]
    url = reverse("admin:rules_statemachine_change", args=[machine.pk])
    data = form_data(admin_client_.get(url))
    assert data["states"] == "greeting\ncollecting\nhandoff\ndone"
    assert data["transitions"] == "greeting: collecting\ncollecting: handoff, done\nhandoff: done"
    assert data["timeouts"] == "collecting: 900"
    data.update(
        states="greeting\ncollecting\nconfirming\nhandoff\ndone",
        transitions="greeting: collecting\ncollecting: confirming, handoff\nconfirming: done, handoff\nhandoff: done",
        actions="collecting: ask, lookup_order\nconfirming: confirm",
        timeouts="collecting: 900\nconfirming: 120.5",
        change_reason="Confirm before closing",
    )
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine.refresh_from_db()
    assert machine.transitions["confirming"] == ["done", "handoff"]
    assert machine.actions == {"collecting": ["ask", "lookup_order"], "confirming": ["confirm"]}
    assert machine.timeouts == {"collecting": 900, "confirming": 120.5}
    record = machine.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "Confirm before closing")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"states": "greeting\ncollecting\nhandoff\ndone\nlimbo"}, "transitions", "Not reachable"),
        ({"transitions": "greeting collecting"}, "transitions", "Line 1: write"),
        ({"timeouts": "collecting: soon"}, "timeouts", "not a number of seconds"),
        ({"initial_state": "start"}, "initial_state", "'start' is not one of the states."),
    ],
)
def test_state_machine_errors_are_shown_on_the_form(admin_client_, config, changes, field, message):
    machine = config["machine"]
    url = reverse("admin:rules_statemachine_change", args=[machine.pk])
    data = form_data(admin_client_.get(url))
    data.update(changes)
    history_before = machine.history.count()
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.errors[field])
    assert machine.history.count() == history_before


@pytest.mark.django_db
@pytest.mark.applies_config_at_once(reason="adds and deletes a machine in the admin to see the services called")
def test_state_machine_add_and_delete_go_through_the_services(admin_client_, staff_user):
    url = reverse("admin:rules_statemachine_add")
    data = form_data(admin_client_.get(url))
    data.update(
        key="tiny",
        states="start\nend",
        initial_state="start",
        handoff_state="start",
        terminal_states="end",
        transitions="start: end",
        max_anomalies="3",
        change_reason="Smallest machine",
    )
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine = StateMachine.objects.get(key="tiny")
    assert machine.history.get().history_change_reason == "Smallest machine"
    response = admin_client_.post(
        reverse("admin:rules_statemachine_delete", args=[machine.pk]), {"post": "yes", "change_reason": "Unused"}
    )
    assert response.status_code == 302
    assert not StateMachine.objects.filter(key="tiny").exists()
    deleted = StateMachine.history.filter(key="tiny", history_type="-").get()
    assert (deleted.history_user, deleted.history_change_reason) == (staff_user, "Unused")


@pytest.mark.django_db
def test_the_rate_limit_is_set_per_agent_in_the_admin_with_who_and_why(admin_client_, config, staff_user):
    url = reverse("admin:agents_agentruntime_add")
    data = form_data(admin_client_.get(url))
    data.update(name="busy_bot", points=[str(config["point"].pk)], change_reason="New agent")
    assert admin_client_.post(url, data).status_code == 302
    agent = AgentRuntime.objects.get(name="busy_bot")
    assert (agent.rate_per_minute, agent.rate_burst) == (None, None)  # no limit unless set
    change = reverse("admin:agents_agentruntime_change", args=[agent.pk])
    page = admin_client_.get(change)
    assert "Requests per minute" in page.content.decode()
    data = form_data(page)
    data.update(rate_per_minute="120", rate_burst="10", change_reason="It ran away")
    response = admin_client_.post(change, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    agent.refresh_from_db()
    assert (agent.rate_per_minute, agent.rate_burst) == (120, 10)
    record = agent.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (staff_user, "It ran away")
    data.update(rate_per_minute="0", change_reason="zero")
    refused = admin_client_.post(change, data)
    assert refused.status_code == 200
    assert "rate_per_minute" in refused.context["adminform"].form.errors

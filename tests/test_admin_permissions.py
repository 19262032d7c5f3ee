"""Every admin write path asks for the permission of the write, not of reading.

The history (revert) form of django-simple-history admits whoever may view a record and then saves
what is posted; the kit makes it ask for the change permission, and refuses a revert outright where
the admin disabled it. The parametrised test covers every admin registered on the site that has a
history form, so an admin added later is covered without being listed here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse
from simple_history.admin import SimpleHistoryAdmin
from simple_history.models import registered_models

from rules.models import ConfigRevision
from tests.support import groups_ensure
from tests.support.admin import build_config, form_data

HISTORY_ADMINS = sorted(
    (model for model, model_admin in admin.site._registry.items() if isinstance(model_admin, SimpleHistoryAdmin)),
    key=lambda model: model._meta.label,
)
VIEW_ONLY_GROUPS = ("risk_approvers", "queue_operators")


@pytest.fixture
def viewer(db) -> Any:
    """Staff in both view-only groups: they may read configuration and agents, and change neither."""
    groups_ensure()
    user = get_user_model().objects.create_user(username="viewer", password="viewer-pw-123", is_staff=True)
    user.groups.add(*Group.objects.filter(name__in=VIEW_ONLY_GROUPS))
    return user


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _history_url(obj: Any, history_id: int) -> str:
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_simple_history", args=[obj.pk, history_id])


def _audit_counts() -> tuple[int, ...]:
    """Every history table's row count and the number of revisions: what any write would change."""
    return (*(m.objects.count() for m in registered_models.values()), ConfigRevision.objects.count())


def test_every_configuration_model_with_history_has_an_admin_history_form():
    # The parametrised test below is only as complete as this list.
    labels = {model._meta.label for model in HISTORY_ADMINS}
    assert {
        "rules.Threshold",
        "rules.KeywordList",
        "rules.DecisionPoint",
        "rules.Rule",
        "rules.StateMachine",
        "agents.AgentRuntime",
        "agents.WebhookSubscription",
    } <= labels


@pytest.mark.django_db
@pytest.mark.parametrize("model", HISTORY_ADMINS, ids=lambda model: model._meta.label)
def test_view_only_staff_cannot_open_or_post_a_history_form(model, staff_user, viewer):
    build_config(staff_user)
    obj = model._default_manager.order_by("pk").first()
    record = obj.history.order_by("history_id").first()
    url = _history_url(obj, record.history_id)
    # What the revert would post, read by someone who may see the form; the viewer sends it himself.
    data = {**form_data(_client(staff_user).get(url)), "change_reason": "Back to how it was"}
    as_viewer = _client(viewer)
    opts = model._meta
    assert viewer.has_perm(f"{opts.app_label}.view_{opts.model_name}")
    assert as_viewer.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_history", args=[obj.pk])).status_code == 200
    before = _audit_counts()
    assert as_viewer.get(url).status_code == 403
    assert as_viewer.post(url, data).status_code == 403
    assert _audit_counts() == before


@pytest.mark.django_db
def test_a_queue_operator_cannot_bring_back_a_deactivated_agent_and_its_token_stays_refused(staff_user, viewer):
    config = build_config(staff_user)
    agent, token = config["agent"], config["token"]
    agent_api = Client(headers={"authorization": f"Bearer {token}"})
    session_url = "/api/v1/sessions/no-such-session"
    assert agent_api.get(session_url).status_code == 404  # the token works: it names no session
    created = agent.history.order_by("history_id").first()
    assert created.is_active is True
    url = _history_url(agent, created.history_id)
    data = {**form_data(_client(staff_user).get(url)), "change_reason": "Back on"}
    deactivated = _client(staff_user).post(
        reverse("admin:agents_agentruntime_changelist"), {"action": "deactivate", "_selected_action": [agent.pk]}
    )
    assert deactivated.status_code == 302
    assert agent_api.get(session_url).status_code == 401

    before = _audit_counts()
    assert _client(viewer).post(url, data).status_code == 403
    agent.refresh_from_db()
    assert agent.is_active is False
    assert agent_api.get(session_url).status_code == 401
    assert _audit_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("model_name", ["agentruntime", "keywordlist", "rule", "webhooksubscription"])
def test_a_disabled_revert_is_refused_even_to_a_superuser(model_name, staff_user):
    build_config(staff_user)
    model = next(m for m in HISTORY_ADMINS if m._meta.model_name == model_name)
    assert admin.site._registry[model].revert_disabled(None)
    obj = model._default_manager.order_by("pk").first()
    record = obj.history.order_by("history_id").first()
    url = _history_url(obj, record.history_id)
    superuser = _client(staff_user)
    page = superuser.get(url)
    assert page.status_code == 200  # one may look at the old version
    before = _audit_counts()
    assert superuser.post(url, {**form_data(page), "change_reason": "Back"}).status_code == 403
    assert _audit_counts() == before


@pytest.mark.django_db
def test_staff_with_the_change_permission_may_revert(staff_user):
    """The refusal is about permissions, not about staff: an editor (no superuser) still reverts."""
    config = build_config(staff_user)
    threshold = config["min_confidence"]
    original = threshold.history.order_by("history_id").first()
    editor = get_user_model().objects.create_user(username="editor", password="editor-pw-123", is_staff=True)
    editor.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="rules", codename__in=["view_threshold", "change_threshold"])
    )
    url = _history_url(threshold, original.history_id)
    data = {**form_data(_client(staff_user).get(url)), "value": "0.5", "change_reason": "Lower"}
    assert _client(editor).post(url, data).status_code == 302
    threshold.refresh_from_db()
    assert threshold.value == Decimal("0.5")


@pytest.mark.django_db
@pytest.mark.parametrize("version", ["abc", "999999"])
def test_a_history_form_for_a_row_that_does_not_exist_is_404(version, staff_user):
    config = build_config(staff_user)
    threshold = config["min_confidence"]
    url = reverse("admin:rules_threshold_simple_history", args=[threshold.pk, version])
    assert _client(staff_user).get(url).status_code == 404


@pytest.mark.django_db
def test_the_history_list_links_versions_only_for_those_who_may_open_them(staff_user, viewer):
    config = build_config(staff_user)
    threshold = config["min_confidence"]
    record = threshold.history.order_by("history_id").first()
    history = reverse("admin:rules_threshold_history", args=[threshold.pk])
    version = _history_url(threshold, record.history_id)
    assert f'href="{version}"' in _client(staff_user).get(history).content.decode()
    page = _client(viewer).get(history).content.decode()
    assert f'href="{version}"' not in page
    assert "Test configuration" in page  # the viewer still reads who changed what, and why

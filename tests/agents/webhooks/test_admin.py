"""The webhook pages of the admin through Django's test client: a subscription made with its secret shown
once, disabled and enabled with the reason in its history, the delivery log (in English and in Chinese),
its filters and the redeliver action, and who may see what."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from agents.sessions.services import session_create, session_transition
from agents.webhooks.models import DeliveryStatus, EventKind, WebhookDelivery, WebhookSubscription
from agents.webhooks.services import webhook_subscription_disable
from tests.support.admin import messages_of
from tests.support.webhooks import subscribe, wait_for, webhook_receiver

SUBSCRIPTIONS = "/admin/agents/webhooksubscription/"
DELIVERIES = "/admin/agents/webhookdelivery/"


def person(username: str, *permissions: str, superuser: bool = False) -> Client:
    user = get_user_model().objects.create_user(
        username=username, password=f"pw-{username}-123", is_staff=True, is_superuser=superuser
    )
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="agents", codename=codename))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client_(db):
    return person("ops", superuser=True)


def test_a_subscription_made_in_the_admin_shows_its_secret_once(bot, admin_client_):
    body = {
        "agent": bot.pk,
        "url": "https://hooks.example.com/arbiter",
        "description": "the runtime's receiver",
        "event_kinds": [EventKind.SESSION_HANDED_OFF, EventKind.BREAKER_OPENED],
        "is_active": "on",
        "change_reason": "the runtime wants handoffs",
    }
    answer = admin_client_.post(f"{SUBSCRIPTIONS}add/", body, follow=True)
    assert answer.status_code == 200
    [said] = [m for m in messages_of(answer) if "shown only this once" in m]
    secret = re.search(r'<code class="arbiter-token">(whsec_[^<]+)</code>', said).group(1)
    sub = WebhookSubscription.objects.get()
    assert sub.secret == secret and sub.event_kinds == ["session.handed_off", "breaker.opened"]
    assert sub.history.get().history_change_reason == "the runtime wants handoffs"
    page = admin_client_.get(f"{SUBSCRIPTIONS}{sub.pk}/change/").content.decode()
    assert secret not in page and sub.secret_prefix in page  # never shown again
    refused = admin_client_.post(f"{SUBSCRIPTIONS}add/", {**body, "url": "ftp://hooks.example.com/"})
    assert refused.status_code == 200 and WebhookSubscription.objects.count() == 1


def test_disable_and_enable_from_the_list_are_recorded_with_why(bot, admin_client_):
    sub, _ = subscribe(bot, "https://hooks.example.com/a", EventKind.SESSION_HANDED_OFF)
    admin_client_.post(SUBSCRIPTIONS, {"action": "disable", "_selected_action": [sub.pk]})
    sub.refresh_from_db()
    assert not sub.is_active and sub.disabled_reason == "Disabled in admin"
    page = admin_client_.get(SUBSCRIPTIONS).content.decode()
    assert "Disabled in admin" in page
    admin_client_.post(SUBSCRIPTIONS, {"action": "enable", "_selected_action": [sub.pk]})
    sub.refresh_from_db()
    assert sub.is_active and sub.disabled_at is None
    reasons = list(sub.history.order_by("history_id").values_list("history_change_reason", flat=True))
    assert reasons == ["test subscribes", "Disabled in admin", "Enabled in admin"]


def test_rotating_shows_the_new_secret_once(bot, admin_client_):
    sub, old = subscribe(bot, "https://hooks.example.com/a", EventKind.SESSION_HANDED_OFF)
    answer = admin_client_.post(SUBSCRIPTIONS, {"action": "rotate_secret", "_selected_action": [sub.pk]}, follow=True)
    sub.refresh_from_db()
    assert sub.secret != old and sub.previous_secret == old
    assert any(sub.secret in m for m in messages_of(answer))


def test_the_delivery_log_lists_filters_and_redelivers(bot, admin_client_, delivering):
    with webhook_receiver(500, 500, 500, 204) as receiver:
        subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        session_create(agent=bot, machine_key="after_sales", session_id="c1")
        session_transition(agent=bot, session_id="c1", to="human_handoff", expected_state="init")
        failed = wait_for(lambda: WebhookDelivery.objects.filter(status=DeliveryStatus.FAILED).first())
        page = admin_client_.get(DELIVERIES).content.decode()
        assert "session handed off to a person" in page and "HTTP 500" in page
        assert admin_client_.get(f"{DELIVERIES}?status__exact=delivered").content.decode().count("HTTP 500") == 0
        detail = admin_client_.get(f"{DELIVERIES}{failed.pk}/change/").content.decode()
        assert failed.event_id in detail
        zh = admin_client_.get(DELIVERIES, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        assert "Webhook 投递" in zh
        answer = admin_client_.post(DELIVERIES, {"action": "redeliver", "_selected_action": [failed.pk]}, follow=True)
        assert any("queued again" in m for m in messages_of(answer))
        again = wait_for(lambda: WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).first())
        assert (again.event_id, again.redelivery_of_id) == (failed.event_id, failed.pk)
        assert len(receiver.received) == 4


def test_staff_without_permission_see_no_subscription_nor_delivery(bot):
    nobody = person("nobody")
    assert nobody.get(SUBSCRIPTIONS).status_code == 403
    assert nobody.get(DELIVERIES).status_code == 403
    viewer = person("viewer", "view_webhookdelivery")
    assert viewer.get(DELIVERIES).status_code == 200
    sub, _ = subscribe(bot, "https://hooks.example.com/a", EventKind.SESSION_HANDED_OFF)
    webhook_subscription_disable(subscription=sub, actor=None, reason="receiver gone")
    delivery = WebhookDelivery.objects.create(subscription=sub, event_id="evt_1", kind="session.handed_off", payload={})
    # Viewing is not redelivering: the action needs its own permission.
    viewer.post(DELIVERIES, {"action": "redeliver", "_selected_action": [delivery.pk]})
    assert WebhookDelivery.objects.count() == 1

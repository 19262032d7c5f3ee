"""Deliveries to a real receiver (an HTTP server on a thread of the test): signed as the client verifies,
retried after failures with backoff, given up after the attempts, and a subscription disabled after
failed deliveries in a row, and said so.

Who sends them (the ``delivering`` fixture): without a broker (the SQLite run) Celery's eager path, in this
process when the event's transaction commits, its retries at once; with PostgreSQL and Redis a real
worker process, its retries after the backoff (made tiny through its environment). The tests poll with a
deadline either way."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from arbiter_client import webhooks
from django.conf import settings
from django.core import mail
from django.utils import timezone

from agents.sessions.services import session_create, session_transition
from agents.webhooks import emit
from agents.webhooks.delivery import backoff, webhook_deliveries_requeue, webhook_delivery_attempt
from agents.webhooks.models import DeliveryStatus, EventKind, WebhookDelivery, WebhookSubscription
from agents.webhooks.services import webhook_subscription_enable, webhook_subscription_rotate_secret
from tests.support import make_user
from tests.support.webhooks import subscribe, wait_for, webhook_receiver


def _hand_off(agent, key: str) -> None:
    session_create(agent=agent, machine_key="after_sales", session_id=key)
    session_transition(agent=agent, session_id=key, to="human_handoff", expected_state="init")


def _settled(count: int) -> list[WebhookDelivery]:
    def done() -> list[WebhookDelivery]:
        rows = list(WebhookDelivery.objects.exclude(status__in=["pending", "retrying"]).order_by("pk"))
        return rows if len(rows) >= count else []

    return wait_for(done, message="the deliveries did not settle")


def test_a_handoff_is_delivered_signed_and_the_client_verifies_it(bot, delivering):
    with webhook_receiver(204) as receiver:
        _, secret = subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        _hand_off(bot, "c1")
        [delivery] = _settled(1)
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 204)
        [got] = receiver.received
    payload = webhooks.verify(secret, got.headers, got.body)
    assert payload["type"] == "session.handed_off"
    data = payload["data"]
    assert (data["session_id"], data["from_state"], data["state"], data["seq"]) == ("c1", "init", "human_handoff", 1)
    assert data["handoff_reason"] == "agent" and data["machine"] == "after_sales"
    assert got.headers["webhook-id"] == delivery.event_id
    assert got.headers["content-type"] == "application/json"
    # Another secret, an altered body, or an old timestamp: refused.
    other = subscribe(bot, receiver.url, EventKind.SESSION_RETURNED)[1]
    for args, kwargs in [
        ((other, got.headers, got.body), {}),
        ((secret, got.headers, got.body.replace(b"c1", b"c2")), {}),
        ((secret, got.headers, got.body), {"now": int(got.headers["webhook-timestamp"]) + 301}),
    ]:
        with pytest.raises(webhooks.WebhookVerificationError):
            webhooks.verify(*args, **kwargs)


def test_a_receiver_failing_twice_gets_the_event_on_the_third_attempt(bot, delivering):
    with webhook_receiver(500, 503, 200) as receiver:
        subscription, secret = subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        _hand_off(bot, "c1")
        [delivery] = _settled(1)
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 3, 200)
        received = list(receiver.received)
    assert len(received) == 3
    assert len({r.headers["webhook-id"] for r in received}) == 1  # one event: the receiver can drop repeats
    for r in received:
        webhooks.verify(secret, r.headers, r.body)
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == 0 and subscription.is_active


def test_failed_deliveries_in_a_row_disable_the_subscription_and_say_so(bot, delivering):
    make_user("watcher")  # staff with an e-mail address: told when a subscription is disabled
    with webhook_receiver(500) as receiver:
        subscription, _ = subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        _hand_off(bot, "c1")
        [first] = _settled(1)
        assert (first.status, first.attempts, first.last_error) == ("failed", 3, "HTTP 500")
        subscription.refresh_from_db()
        assert subscription.consecutive_failures == 1 and subscription.is_active
        _hand_off(bot, "c2")
        _settled(2)
        assert len(receiver.received) == 6
        subscription.refresh_from_db()
        assert not subscription.is_active and subscription.disabled_at is not None
        assert subscription.disabled_reason == "Disabled after 2 failed deliveries in a row (the last: HTTP 500)."
        latest = subscription.history.latest()
        assert latest.history_change_reason == subscription.disabled_reason and latest.is_active is False
        if settings.CELERY_TASK_ALWAYS_EAGER:  # the worker's mail goes to its own log
            [notice] = mail.outbox
            assert "disabled" in notice.subject and subscription.url in notice.body
            assert notice.to == ["watcher@example.com"]
        # Disabled: the next event is not even recorded for it; enabled again, it is sent.
        _hand_off(bot, "c3")
        assert WebhookDelivery.objects.count() == 2
        webhook_subscription_enable(subscription=subscription, actor=None, reason="receiver fixed")
        receiver.statuses[:] = [204]
        _hand_off(bot, "c4")
        assert _settled(3)[-1].status == DeliveryStatus.DELIVERED
    subscription.refresh_from_db()
    assert subscription.is_active and subscription.consecutive_failures == 0 and subscription.disabled_reason == ""


def test_a_rotated_secret_signs_alongside_the_new_one_for_a_while(bot, delivering):
    with webhook_receiver(204) as receiver:
        subscription, old = subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        new = webhook_subscription_rotate_secret(subscription=subscription, actor=None, reason="rotation")
        _hand_off(bot, "c1")
        _settled(1)
        [got] = receiver.received
    assert len(got.headers["webhook-signature"].split()) == 2
    assert webhooks.verify(new, got.headers, got.body)["type"] == "session.handed_off"
    assert webhooks.verify(old, got.headers, got.body)["type"] == "session.handed_off"
    assert WebhookSubscription.history.filter(id=subscription.pk).latest().history_change_reason == "rotation"


def test_the_backoff_doubles_with_jitter_up_to_its_ceiling(settings):
    settings.ARBITER_WEBHOOK_BACKOFF_SECONDS = 30
    settings.ARBITER_WEBHOOK_BACKOFF_MAX_SECONDS = 3600
    rng = random.Random(7)
    for attempt, ceiling in [(1, 30), (2, 60), (3, 120), (7, 1920), (8, 3600), (20, 3600)]:
        waits = [backoff(attempt, rng=rng) for _ in range(200)]
        assert ceiling / 2 <= min(waits) and max(waits) <= ceiling
        assert max(waits) - min(waits) > ceiling / 4  # jittered, not one fixed delay


@pytest.mark.django_db
def test_two_copies_of_one_attempt_send_it_once(bot, quick):
    # As a redelivered task message or the periodic requeue racing a late retry would run it.
    with webhook_receiver(500) as receiver:
        subscription, _ = subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        delivery = WebhookDelivery.objects.create(
            subscription=subscription, event_id="evt_1", kind="session.handed_off", payload={"type": "x"}
        )
        assert webhook_delivery_attempt(delivery_id=delivery.pk, attempt=1) is not None  # failed: retry later
        assert webhook_delivery_attempt(delivery_id=delivery.pk, attempt=1) is None  # a copy: nothing sent
        assert len(receiver.received) == 1
        webhook_delivery_attempt(delivery_id=delivery.pk, attempt=2)
        assert len(receiver.received) == 2
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.status) == (2, "retrying")


def test_a_delivery_whose_task_was_never_queued_is_sent_by_the_requeue(bot, delivering, monkeypatch):
    # The broker was down when the event committed: the delivery waits, pending, in the outbox.
    with webhook_receiver(204) as receiver:
        subscribe(bot, receiver.url, EventKind.SESSION_HANDED_OFF)
        monkeypatch.setattr(emit, "delivery_queue", lambda *a, **k: False)
        _hand_off(bot, "c1")
        monkeypatch.undo()
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "pending" and receiver.received == []
        assert webhook_deliveries_requeue() == 0  # not overdue yet
        WebhookDelivery.objects.update(next_attempt_at=timezone.now() - dt.timedelta(minutes=5))
        assert webhook_deliveries_requeue() == 1
        assert _settled(1)[0].status == "delivered"
        assert len(receiver.received) == 1
        assert webhook_deliveries_requeue() == 0

"""Events told to webhook subscriptions: a delivery row per subscription that wants the event, written in
the transaction that made the event (an outbox), and a task queued for each once that transaction commits.

Nothing is written, read or queued for an event no subscription wants. Which subscriptions want what is
kept per process (``_subscriptions``) and dropped when their change stamp moves: the stamp (the count
and highest id of the subscriptions' history rows, every write being audited) rides on the engine
cache's revision check (``rules.config.runtime.EngineCache.watch``), so an agent without subscriptions
costs a session move no statement, and a new or changed subscription is seen in every process within
``ARBITER_REVISION_CHECK_SECONDS``. The failure counter is not in the history and does not move the stamp.

A task that cannot be queued (the broker unreachable) leaves its delivery pending;
``webhook_deliveries_requeue`` (a periodic task) queues what has waited too long, and the attempt
number each task carries lets only one of two copies of an attempt send it (``agents.webhooks.delivery``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Expression, IntegerField
from django.db.models.expressions import RawSQL
from django.utils import timezone
from kombu.exceptions import KombuError

from agents.webhooks.models import INSTALLATION_KINDS, WebhookDelivery, WebhookSubscription, new_event_id

logger = logging.getLogger(__name__)

DELIVER_TASK = "agents.tasks.webhook_deliver"


@dataclass(frozen=True)
class _Wanted:
    pk: int
    agent_id: int
    kinds: frozenset[str]


_subscriptions: tuple[_Wanted, ...] | None = None
# Moved by every clear: a list read before a clear is not kept after it (another thread's revision check
# may clear while this one reads).
_generation = 0


def clear() -> None:
    global _subscriptions, _generation
    _generation += 1
    _subscriptions = None


def subscriptions_stamp() -> Expression:
    """One value that moves with every audited change of any subscription (see the module docstring)."""
    table = WebhookSubscription.history.model._meta.db_table
    # As agents.runtimes.principal_cache.agents_stamp; the table name comes from the model.
    return RawSQL(  # noqa: S611
        f'SELECT COUNT(*) * 4294967296 + COALESCE(MAX(history_id), 0) FROM "{table}"',  # noqa: S608
        (),
        output_field=IntegerField(),
    )


def _active() -> tuple[_Wanted, ...]:
    from rules.config.runtime import engines

    global _subscriptions
    engines.check()  # may drop the list: at most every ARBITER_REVISION_CHECK_SECONDS
    found, generation = _subscriptions, _generation
    if found is None:
        active = WebhookSubscription.objects.filter(is_active=True).order_by()
        rows = active.values_list("pk", "agent_id", "event_kinds")
        found = tuple(_Wanted(pk, agent_id, frozenset(kinds)) for pk, agent_id, kinds in rows)
        if generation == _generation:
            _subscriptions = found
    return found


def subscriptions_wanting(kind: str, *, agent_id: int | None) -> list[int]:
    """The active subscriptions that want ``kind``: the agent's own, or for an installation-wide kind
    (breakers, change requests) every agent's."""
    wide = kind in INSTALLATION_KINDS
    return [s.pk for s in _active() if kind in s.kinds and (wide or s.agent_id == agent_id)]


def webhook_event(kind: str, *, data: dict[str, Any], agent_id: int | None = None) -> list[int]:
    """Record ``kind`` with ``data`` (JSON-safe) for every subscription that wants it, in the caller's
    transaction; their deliveries are queued when it commits. Returns the deliveries' ids."""
    wanting = subscriptions_wanting(kind, agent_id=agent_id)
    if not wanting:
        return []
    now = timezone.now()
    payload = {"type": kind, "timestamp": now.isoformat().replace("+00:00", "Z"), "data": data}
    event_id = new_event_id()
    rows = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(subscription_id=pk, event_id=event_id, kind=kind, payload=payload, next_attempt_at=now)
            for pk in wanting
        ]
    )
    ids = [row.pk for row in rows]
    for pk in ids:
        transaction.on_commit(partial(delivery_queue, pk, attempt=1))
    return ids


def delivery_queue(delivery_id: int, *, attempt: int, countdown: float | None = None) -> bool:
    """Queue attempt ``attempt`` of a delivery. A broker that cannot be reached is logged, not raised: the
    event has happened and committed, and the periodic requeue sends it later."""
    from decision_service.celery import app

    queue = settings.ARBITER_WEBHOOK_QUEUE or None
    try:
        app.tasks[DELIVER_TASK].apply_async(args=[delivery_id, attempt], countdown=countdown, queue=queue)
    except (KombuError, OSError) as exc:
        logger.error("could not queue webhook delivery %s: %s", delivery_id, exc)
        return False
    return True


_CHANGE_REQUEST_KINDS = {"created": "change_request.pending", "applied": "change_request.applied"}


def change_request_stepped(*, request: Any, kind: str, actor: Any, **_: Any) -> None:
    """``rules.hooks.change_request_stepped``: a request made to wait for approval, or applied, is told to
    the subscriptions that want it (of every agent: a change request belongs to none)."""
    event = _CHANGE_REQUEST_KINDS.get(kind)
    if event is None or (kind == "created" and request.state != "pending"):
        return
    base = settings.ARBITER_BASE_URL.rstrip("/")
    data = {
        "change_request": request.pk,
        "state": request.state,
        "risk": request.risk,
        "reason": request.reason,
        "author": request.author_name,
        "base_revision": request.base_revision,
        "applied_revision": request.applied_revision,
        "changes": [
            {"action": c.get("action"), "kind": c.get("kind"), "key": c.get("key"), "point": c.get("point") or None}
            for c in request.changes or []
        ],
        "url": f"{base}/admin/rules/changerequest/{request.pk}/change/",
    }
    webhook_event(event, data=data)

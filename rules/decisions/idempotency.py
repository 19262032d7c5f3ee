"""An agent's Idempotency-Keys for the writes that are not decisions (the agents app's session writes).

Every write of the agent API shares one key space per agent, kept in ``DecisionIdempotencyKey`` (its
unique index on (agent, key) is what makes it race-safe): a decision's key names its log row; any other
write's names an ``operation``, the digest of what was asked, and a ``target`` the caller answers a
retry from. Rules stores them and compares; what a target means is the caller's.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import IntegrityError, transaction

from decision_service.errors import IdempotencyConflict
from rules.models import DecisionIdempotencyKey


class KeyTaken(Exception):
    """Another request stored the key between this one's lookup and its write (it committed first)."""


def write_key_get(*, agent_id: int, key: str, operation: str, digest: str) -> Any | None:
    """The target of this agent's earlier ``operation`` with this key and request, or ``None`` when the
    key is free; a key used for any other write (a decision, another operation, another body) is refused."""
    found = DecisionIdempotencyKey.objects.filter(agent_id=agent_id, key=key).first()
    if found is None:
        return None
    if found.decision_id is not None or found.operation != operation or found.request_digest != digest:
        raise IdempotencyConflict(f"Idempotency-Key '{key}' was already used with a different request.")
    return found.target


def write_key_store(*, agent_id: int, key: str, operation: str, digest: str, target: Any, now: dt.datetime) -> None:
    """Store the key of a write made in the caller's transaction; ``KeyTaken`` when a concurrent request
    holds it (the caller's transaction must then roll back, and the caller look the key up again)."""
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction stays usable to roll back
            DecisionIdempotencyKey.objects.create(
                agent_id=agent_id, key=key, operation=operation, request_digest=digest, target=target, created_at=now
            )
    except IntegrityError as exc:
        raise KeyTaken(key) from exc

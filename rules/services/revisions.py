"""Configuration changes and the revisions they cut.

Every write to a configuration record runs inside ``config_change``. The outermost one takes a
lock that serialises configuration writers, and on leaving — if anything was written — cuts one new
revision with a snapshot of the whole configuration. Nested calls join the outer change, so an
admin form with inlines, or a YAML import of a hundred records, becomes exactly one revision.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction

from rules.models import ConfigRevision
from rules.selectors import config_document, revision_latest

# Arbitrary constant: the key of the PostgreSQL advisory lock that serialises configuration writers.
_CONFIG_LOCK_KEY = 7_240_311

Actor = AbstractBaseUser | None


@dataclass
class ConfigChange:
    actor: Actor
    reason: str
    dirty: bool = False
    revision: ConfigRevision | None = None
    touched: list[str] = field(default_factory=list)


_current: contextvars.ContextVar[ConfigChange | None] = contextvars.ContextVar("config_change", default=None)


def _lock_writers() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CONFIG_LOCK_KEY])
    # SQLite serialises writers itself.


@contextmanager
def config_change(*, actor: Actor, reason: str) -> Iterator[ConfigChange]:
    """Group configuration writes into one transaction and (if anything changed) one revision."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    change = ConfigChange(actor=actor, reason=reason)
    token = _current.set(change)
    try:
        with transaction.atomic():
            _lock_writers()
            yield change
            if change.dirty:
                change.revision = revision_create(actor=actor, reason=reason)
    finally:
        _current.reset(token)


def audited_save(instance: models.Model, *, actor: Actor, reason: str) -> models.Model:
    """Validate and save a configuration record, recording who and why in its history."""
    with config_change(actor=actor, reason=reason) as change:
        instance.full_clean()
        if not _differs_from_stored(instance):
            return instance  # a save that changes nothing writes no history and cuts no revision
        instance._history_user = actor  # type: ignore[attr-defined]
        instance._change_reason = reason  # type: ignore[attr-defined]
        instance.save()
        change.dirty = True
        change.touched.append(f"{instance._meta.model_name}:{instance.pk}")
    return instance


def _differs_from_stored(instance: models.Model) -> bool:
    if instance.pk is None or instance._state.adding:
        return True
    names = [f.attname for f in instance._meta.concrete_fields]
    stored = type(instance)._default_manager.filter(pk=instance.pk).values(*names).first()
    if stored is None:
        return True
    return any(stored[name] != getattr(instance, name) for name in names)


def audited_delete(instance: models.Model, *, actor: Actor, reason: str) -> None:
    with config_change(actor=actor, reason=reason) as change:
        instance._history_user = actor  # type: ignore[attr-defined]
        instance._change_reason = reason  # type: ignore[attr-defined]
        instance.delete()
        change.dirty = True


def _check_compiles(snapshot: dict[str, Any]) -> None:
    """Refuse a configuration the configured engine backend cannot run (e.g. beyond durable-rules'
    limits), while the change can still be rolled back, rather than failing on the next request."""
    from rules.engine import CompileError, compile_config

    try:
        compile_config(snapshot, revision=0, backend=settings.ARBITER_ENGINE)
    except CompileError as exc:
        raise ValidationError(f"The {settings.ARBITER_ENGINE} engine cannot run this configuration: {exc}") from exc


def snapshot_digest(snapshot: dict[str, Any]) -> str:
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def revision_create(*, actor: Actor, reason: str) -> ConfigRevision:
    """Snapshot the live configuration as the next revision, unless it equals the latest one."""
    with transaction.atomic():
        _lock_writers()
        snapshot = config_document()
        digest = snapshot_digest(snapshot)
        latest = revision_latest()
        if latest is not None and latest.digest == digest:
            return latest
        _check_compiles(snapshot)
        user: Any = actor if actor is not None and getattr(actor, "pk", None) else None
        return ConfigRevision.objects.create(
            number=(latest.number + 1) if latest else 1,
            snapshot=snapshot,
            digest=digest,
            created_by=user,
            reason=reason[:500],
        )

"""Configuration changes and the revisions they cut — and the gate that holds high-risk ones back.

Every write to a configuration record runs inside ``config_change``. The outermost one takes a
lock that serialises configuration writers, and on leaving — if anything was written — cuts one new
revision with a snapshot of the whole configuration. Nested calls join the outer change, so an
admin form with inlines, or a YAML import of a hundred records, becomes exactly one revision.

Because every writer (admin form, bulk action, revert, import_config, the change request API, the
shell) goes through here, this is where four-eyes approval is enforced: before the revision is cut,
the change is compared with the latest revision (``rules.governance.risk``). A high-risk change is rolled back —
the live configuration never sees it — and becomes a pending change request instead, which the
caller learns of as ``ApprovalRequired``. Only ``change_request_apply`` (an approved request, or
break glass) passes the gate with a high-risk change. The first configuration of an installation
(no revision yet) applies directly: there is nothing live to protect.

The gate itself is governance's (``rules.governance.gate``): it registers here from
``RulesConfig.ready()`` (``gate_register``), so this seam, which every record service imports, does not
import the change request workflow. With no gate registered a change is refused, never let through.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils.translation import gettext

from decision_service.digests import canonical_digest
from rules.config.document.diff import RecordChange
from rules.config.selectors import config_document, revision_latest
from rules.config.tool_definitions import tool_problems
from rules.errors import ApprovalRequired
from rules.governance.risk import RiskReason
from rules.models import ChangeRequest, ConfigRevision

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
    # Set only by change_request_apply: the approved request whose change this is.
    change_request: ChangeRequest | None = None


@dataclass(frozen=True)
class Proposal:
    """A change the gate held back: what it would do, against which revision, and why it needs approval."""

    base_revision: int
    before: dict[str, Any]
    after: dict[str, Any]
    changes: list[RecordChange]
    risks: list[RiskReason]


class Gate(Protocol):
    """What the seam asks of the four-eyes gate (``rules.governance.gate`` is the one implementation)."""

    def held(self, change: ConfigChange, snapshot: dict[str, Any]) -> Proposal | None:
        """The proposal to hold back for approval, or None when the change may apply now."""

    def hold(self, *, proposal: Proposal, actor: Actor, reason: str) -> ChangeRequest:
        """Record a held-back change as a pending change request."""

    def applied(self, change: ConfigChange) -> None:
        """A revision was cut (under the writers' lock): mark the open requests it makes stale."""


_gate: Gate | None = None


def gate_register(gate: Gate) -> None:
    """Install the four-eyes gate (``RulesConfig.ready()``); a second call replaces the first."""
    global _gate
    _gate = gate


def _registered_gate() -> Gate:
    if _gate is None:
        raise RuntimeError("No configuration gate is registered (rules.apps.RulesConfig.ready() registers it).")
    return _gate


_current: contextvars.ContextVar[ConfigChange | None] = contextvars.ContextVar("config_change", default=None)


def config_writers_lock() -> None:
    """Take the lock that serialises configuration writers until the transaction ends (re-entrant).
    Change request services take it before a request's row lock (``rules.governance.change_request_events``)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CONFIG_LOCK_KEY])
    # SQLite serialises writers itself.


@contextmanager
def config_change(*, actor: Actor, reason: str, change_request: ChangeRequest | None = None) -> Iterator[ConfigChange]:
    """Group configuration writes into one transaction and (if anything changed) one revision.

    A high-risk change is not applied: it is rolled back and ``ApprovalRequired`` is raised with the
    change request it became (see the module docstring). ``change_request`` is for
    ``change_request_apply`` only.
    """
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    change = ConfigChange(actor=actor, reason=reason, change_request=change_request)
    token = _current.set(change)
    held: Proposal | None = None
    try:
        with transaction.atomic():
            config_writers_lock()
            yield change
            if change.dirty:
                snapshot = config_document()
                _check_tools(snapshot)
                held = governance_gate(change, snapshot)
                if held is not None:
                    transaction.set_rollback(True)
                else:
                    change.revision = revision_create(actor=actor, reason=reason, snapshot=snapshot)
                    _supersede_open_requests(change)
    finally:
        _current.reset(token)
    if held is not None:
        raise ApprovalRequired(_registered_gate().hold(proposal=held, actor=actor, reason=reason))


def governance_gate(change: ConfigChange, snapshot: dict[str, Any]) -> Proposal | None:
    """The proposal to hold back for approval, or None when the change may apply now (see the module
    docstring). Tests that only build configuration replace this; the governance tests never do."""
    return _registered_gate().held(change, snapshot)


def _supersede_open_requests(change: ConfigChange) -> None:
    if change.revision is not None:
        _registered_gate().applied(change)


# django-simple-history's history_change_reason is a CharField(max_length=100): PostgreSQL refuses a longer
# reason (an applied change request's "change request N: <its reason> (approved by …)" easily is). The whole
# reason stays in the revision (500 characters) and the change request; the history row keeps its start.
HISTORY_REASON_CHARS = 100


def history_reason(reason: str) -> str:
    return reason if len(reason) <= HISTORY_REASON_CHARS else reason[: HISTORY_REASON_CHARS - 1] + "…"


def audited_save(instance: models.Model, *, actor: Actor, reason: str) -> models.Model:
    """Validate and save a configuration record, recording who and why in its history."""
    with config_change(actor=actor, reason=reason) as change:
        instance.full_clean()
        if not _differs_from_stored(instance):
            return instance  # a save that changes nothing writes no history and cuts no revision
        instance._history_user = actor  # type: ignore[attr-defined]
        instance._change_reason = history_reason(reason)  # type: ignore[attr-defined]
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
        instance._change_reason = history_reason(reason)  # type: ignore[attr-defined]
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


def _check_tools(snapshot: dict[str, Any]) -> None:
    """Refuse a change that leaves a tool contract naming a state or event its machines no longer have (a
    machine edited or deleted after the tool was saved): each record is checked when it is saved, but only
    the whole configuration says whether they still fit together, whatever order a change wrote them in."""
    tools = snapshot.get("tools", [])
    if not tools:
        return
    machines = {m["key"]: m for m in snapshot["machines"]}
    problems = [
        f"{tool['name']} {'.'.join(map(str, at))}: {message}"
        for tool in tools
        for at, message in tool_problems(tool, machines=machines).items()
    ]
    if problems:
        raise ValidationError(
            [gettext("Tool contracts would not fit the machines: %(problems)s") % {"problems": "; ".join(problems)}]
        )


def snapshot_digest(snapshot: dict[str, Any]) -> str:
    return canonical_digest(snapshot, text="utf-8")


def revision_create(*, actor: Actor, reason: str, snapshot: dict[str, Any] | None = None) -> ConfigRevision:
    """Snapshot the live configuration as the next revision, unless it equals the latest one."""
    with transaction.atomic():
        config_writers_lock()
        snapshot = config_document() if snapshot is None else snapshot
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

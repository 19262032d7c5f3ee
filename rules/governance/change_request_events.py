"""What every change request service shares: who the actor is, the request's lock, and its history.

**Lock order.** A service that changes a request first takes the configuration writers' lock, then
the request's row lock (``locked``), and re-checks the request's state under both. Configuration
writers take the writers' lock first too and touch request rows (``change_requests_supersede``) only
while holding it, and applying a request runs inside the locked transaction of the service that
applies it; so every path takes the two locks in the same order, and two of them never wait on each
other in a circle. Holding the writers' lock also means what a service reads of the live configuration
(to diff an edit, to check a request is still current) does not move until it commits.

**History.** An event stores its kind, what a person typed (``detail``) and, for what Arbiter itself
says about the step, a message key with its values (``params``); ``change_request_event_line`` renders
it in the reader's language. ``change_request_via`` records the path a change came by (the shell, for
instance), since the actor named there is not authenticated the way a signed-in user is.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import PermissionsMixin
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules import hooks
from rules.config.revisions import Actor, config_writers_lock
from rules.models import ChangeRequest, ChangeRequestEvent

_via: contextvars.ContextVar[str] = contextvars.ContextVar("change_request_via", default="")


@contextmanager
def change_request_via(path: str) -> Iterator[None]:
    """Record ``path`` (e.g. ``"import_config (shell)"``) on every request event written inside."""
    token = _via.set(path)
    try:
        yield
    finally:
        _via.reset(token)


def actor_user(actor: Actor) -> Any:
    return actor if actor is not None and getattr(actor, "pk", None) else None


def actor_name(actor: Actor) -> str:
    return actor.get_username() if isinstance(actor, AbstractBaseUser) else "system"


def actor_may(actor: Actor, permission: str) -> bool:
    return isinstance(actor, PermissionsMixin) and bool(actor.is_active) and actor.has_perm(permission)


def locked(request: ChangeRequest) -> ChangeRequest:
    """The request as stored now, locked until the transaction ends (see the module docstring for the
    order of the locks). Call inside ``transaction.atomic``."""
    config_writers_lock()
    return ChangeRequest.objects.select_for_update().get(pk=request.pk)


def event(request: ChangeRequest, kind: str, actor: Actor, detail: str = "", **params: Any) -> None:
    """Record a step; ``params`` holds a ``message`` key of ``MESSAGES`` and its values, if any."""
    if _via.get():
        params["via"] = _via.get()
    ChangeRequestEvent.objects.create(
        change_request=request,
        user=actor_user(actor),
        user_name=actor_name(actor),
        kind=kind,
        detail=detail,
        params=params,
    )
    hooks.change_request_stepped.ask(request=request, kind=kind, actor=actor)


KINDS: dict[str, Promise] = {
    "created": _("created"),
    "edited": _("edited"),
    "approved": _("approved"),
    "rejected": _("rejected"),
    "withdrawn": _("withdrawn"),
    "scheduled": _("scheduled"),
    "applied": _("applied"),
    "failed": _("failed to apply"),
    "superseded": _("superseded"),
    "break_glass": _("break glass"),
    "review_acknowledged": _("review acknowledged"),
}

MESSAGES: dict[str, Promise] = {
    "needs_approval": _("%(count)s record(s); needs approval"),
    "applied_at_once": _("nothing in it needs approval: applied at once"),
    "approvals_withdrawn": _("approvals withdrawn: %(users)s"),
    "no_approvals_to_withdraw": _("no approvals to withdraw"),
    "to_apply_at": _("to apply at %(at)s"),
    "as_approved": _("as approved"),
    "record_changed": _("%(record)s changed since the request was made (revision %(revision)s)"),
    "as_revision": _("as revision %(revision)s"),
}


def change_request_event_line(event: ChangeRequestEvent) -> dict[str, str]:
    """An event as the request's page shows it, in the active language: ``kind``, ``detail`` (Arbiter's
    message, then what the person typed) and ``via``. Rows written before events had ``params`` show
    their stored English detail as it is."""
    params = dict(event.params or {})
    kind = KINDS.get(event.kind)
    parts = []
    message = MESSAGES.get(params.pop("message", ""))
    if message is not None:
        try:
            parts.append(str(message) % params)
        except (KeyError, TypeError, ValueError):
            parts.append(str(message))
    if event.detail:
        parts.append(event.detail)
    return {
        "kind": str(kind) if kind is not None else event.kind,
        "detail": "; ".join(parts),
        "via": params.get("via", ""),
        "who": event.user_name or gettext("system"),
    }

"""Applying change requests: an approved (or break-glass) request becomes one revision, once.

Invariants (each kept under the request's lock, see ``rules.governance.change_request_events``):
- a request is applied at most once, and an applied request has its ``applied_revision``;
- only an open request (pending or approved) is applied: a rejected or withdrawn one never is;
- what is applied is the ``changes`` stored on the request when the lock was taken — the same ones
  the approvals were given for (``change_request_approve`` checks their digest under the same lock);
- the apply runs inside the transaction of the service that decided it (the last approval, break
  glass, the scheduler), so no other service sees the request approved but not applied.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from decision_service.errors import DomainError
from rules.config.revisions import Actor
from rules.config.selectors import config_document, revision_latest
from rules.errors import ChangeRequestSuperseded, ConfigError, NotPending
from rules.governance.change_request_data import change_request_stale_record, config_document_apply
from rules.governance.change_request_events import actor_name, event, locked
from rules.models import OPEN_STATES, ChangeRequest, ChangeRequestState

logger = logging.getLogger(__name__)


def not_open(request: ChangeRequest, what: str = "pending") -> DomainError:
    """The refusal for a request that can no longer be decided on: superseded ones say by what."""
    if request.state == ChangeRequestState.SUPERSEDED:
        record = (request.superseded_by or {}).get("record", "a record it touches")
        return ChangeRequestSuperseded(
            f"Change request {request.pk} is superseded: {record} changed since it was made.",
            extra={"superseded_by": request.superseded_by},
        )
    return NotPending(f"Change request {request.pk} is {request.state}, not {what}.")


def _supersede(request: ChangeRequest, record: str, revision: int | None) -> None:
    request.state = ChangeRequestState.SUPERSEDED
    request.superseded_by = {"record": record, "revision": revision}
    request.save(update_fields=["state", "superseded_by", "updated_at"])
    event(request, "superseded", None, message="record_changed", record=record, revision=revision)


def apply_locked(request: ChangeRequest, actor: Actor) -> DomainError | None:
    """Apply ``request``, which the caller holds locked (``locked``) and found open, inside the caller's
    transaction. Returns the refusal to raise once that transaction has committed (``superseded``, or
    the configuration refusing it — recorded in ``failure``), so that what it records stays recorded."""
    from rules.config.yaml_import import config_apply

    live = config_document()
    stale = change_request_stale_record(request, live)
    if stale is not None:
        latest = revision_latest()
        _supersede(request, stale, latest.number if latest else None)
        return ChangeRequestSuperseded(
            gettext(
                "Change request %(number)s can no longer be applied as it is: %(record)s changed since it was made."
            )
            % {"number": request.pk, "record": stale},
            extra={"superseded_by": request.superseded_by},
        )
    approvers = ", ".join(a.user.get_username() for a in request.approvals.select_related("user"))
    how = f"approved by {approvers}" if approvers else f"break glass by {actor_name(actor)}"
    reason = f"change request {request.pk}: {request.reason} ({how})"[:500]
    try:
        result = config_apply(
            document=config_document_apply(live, request.changes),
            actor=request.author,
            reason=reason,
            change_request=request,
        )
    except ConfigError as exc:  # config_apply's own savepoint is rolled back; the request says why
        request.failure = "; ".join(exc.problems)
        request.save(update_fields=["failure", "updated_at"])
        event(request, "failed", actor, request.failure)
        return exc
    request.state = ChangeRequestState.APPLIED
    request.applied_at = timezone.now()
    request.applied_revision = result.revision
    request.failure = ""
    request.save(update_fields=["state", "applied_at", "applied_revision", "failure", "updated_at"])
    event(request, "applied", actor, message="as_revision", revision=result.revision)
    return None


def change_request_apply(*, request: ChangeRequest, actor: Actor) -> ChangeRequest:
    """Apply an approved (or break-glass) request as one revision, if nothing it touches changed since.

    A request that cannot be applied stays unapplied and says why: ``superseded`` (with the record
    that changed; ``ChangeRequestSuperseded`` is raised) or, when the configuration refuses it (it no
    longer compiles, a record is refused), in ``failure`` (``ConfigError`` is raised). An applied
    request is returned as it is (a retried task); any other that is not approved is refused.
    """
    with transaction.atomic():
        request = locked(request)
        if request.state == ChangeRequestState.APPLIED:
            return request  # applied meanwhile: applying twice would be wrong
        # Only an approved request is applied here (by the scheduler, on time): a pending one has not
        # had its approvals, and this is a public service the shell can call too.
        if request.state != ChangeRequestState.APPROVED:
            raise not_open(request, "approved")
        refusal = apply_locked(request, actor)
    if refusal is not None:
        raise refusal
    return request


def change_requests_apply_due(*, now: Any = None) -> list[int]:
    """Apply every approved request whose time has come (Celery beat). Idempotent: an applied request
    is never applied again; a superseded one is marked and skipped; one rejected meanwhile is skipped."""
    now = now or timezone.now()
    applied = []
    due = ChangeRequest.objects.filter(state=ChangeRequestState.APPROVED, apply_at__lte=now).order_by("apply_at", "pk")
    for pk in list(due.values_list("pk", flat=True)):
        request = ChangeRequest.objects.get(pk=pk)
        try:
            change_request_apply(request=request, actor=None)
        except (ChangeRequestSuperseded, ConfigError, NotPending) as exc:
            logger.warning("change request %s was not applied: %s", pk, exc)
            continue
        applied.append(pk)
    return applied


def change_requests_supersede(
    *, snapshot: Mapping[str, Any], revision: int, applying: ChangeRequest | None = None
) -> list[int]:
    """After a revision (under the writers' lock): mark every open request that touches a record the
    revision changed."""
    marked = []
    open_requests = ChangeRequest.objects.filter(state__in=OPEN_STATES)
    if applying is not None:
        open_requests = open_requests.exclude(pk=applying.pk)
    for request in open_requests:
        stale = change_request_stale_record(request, snapshot)
        if stale is not None:
            _supersede(request, stale, revision)
            marked.append(request.pk)
    return marked

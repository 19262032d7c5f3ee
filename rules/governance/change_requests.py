"""Change requests: propose, edit, approve, reject, withdraw, schedule, break glass, acknowledge.

Four-eyes rules are enforced here, whatever the caller (admin, API, shell): a request needs
``settings.ARBITER_REQUIRED_APPROVALS`` approvals from users other than its author who hold the
``rules.approve_changerequest`` permission (the ``risk_approvers`` group; superusers hold every
permission). An approval names the digest of the change its approver reviewed
(``change_request_digest``); one for any other change — the author edited it meanwhile — is refused.
Reaching the required approvals applies it at once, in the same locked transaction, unless it has an
``apply_at`` in the future (then ``change_requests_apply_due``, run by Celery beat, applies it on
time). Applying re-checks that no record it touches changed since it was made (else it is
``superseded``) and writes it through the configuration-change seam as one revision whose history rows
name it (``rules.governance.change_request_apply``). At most one open request proposes a given change.

Every service here takes the configuration writers' lock and the request's row lock, in that order,
and re-checks the request's state under them (``rules.governance.change_request_events``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext
from kombu.exceptions import KombuError

from decision_service.celery import task_queue
from rules.config.document.diff import config_diff
from rules.config.revisions import Actor, Proposal, config_writers_lock
from rules.config.selectors import config_document, revision_latest
from rules.errors import (
    ChangeRequestChanged,
    ConfigError,
    DuplicateChangeRequest,
    NoChanges,
    NotPending,
    OverrideReasonRequired,
    PermissionDenied,
    SelfApprovalForbidden,
)
from rules.governance.change_request_apply import (
    apply_locked,
    change_request_apply,
    change_requests_apply_due,
    change_requests_supersede,
    not_open,
)
from rules.governance.change_request_data import (
    DiffRow,
    change_document,
    change_record_label,
    change_request_diff,
    change_request_diff_rows,
    change_request_digest,
    change_request_stale_record,
    config_document_apply,
)
from rules.governance.change_request_events import (
    actor_may,
    actor_name,
    actor_user,
    change_request_event_line,
    change_request_via,
    event,
    locked,
)
from rules.governance.risk import RiskReason, change_risks
from rules.models import (
    OPEN_STATES,
    ChangeRequest,
    ChangeRequestApproval,
    ChangeRequestRisk,
    ChangeRequestState,
    ImpactStatus,
)

logger = logging.getLogger(__name__)

APPROVE_PERMISSION = "rules.approve_changerequest"
PROPOSE_PERMISSION = "rules.add_changerequest"
BREAK_GLASS_PERMISSION = "rules.break_glass_changerequest"

# What callers import from here, wherever it now lives.
__all__ = [
    "APPROVE_PERMISSION",
    "BREAK_GLASS_PERMISSION",
    "PROPOSE_PERMISSION",
    "DiffRow",
    "change_document",
    "change_record_label",
    "change_request_acknowledge",
    "change_request_apply",
    "change_request_approvals_required",
    "change_request_approve",
    "change_request_break_glass",
    "change_request_diff",
    "change_request_diff_rows",
    "change_request_digest",
    "change_request_event_line",
    "change_request_hold",
    "change_request_propose",
    "change_request_reject",
    "change_request_schedule",
    "change_request_stale_record",
    "change_request_update",
    "change_request_via",
    "change_request_withdraw",
    "change_requests_apply_due",
    "change_requests_supersede",
    "config_document_apply",
]


def _risks_document(risks: Iterable[RiskReason]) -> list[dict[str, Any]]:
    return [r.document() for r in risks]  # with its message id, so the admin renders it in its reader's language


def _refuse_duplicate(changes: Iterable[Mapping[str, Any]], *, besides: int | None = None) -> None:
    """Refuse a change an open request already proposes, exactly (under the writers' lock, so that two
    identical proposals at once cannot both pass)."""
    digest = change_request_digest(changes)
    open_requests = ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk")
    if besides is not None:
        open_requests = open_requests.exclude(pk=besides)
    for other in open_requests:
        if change_request_digest(other.changes) == digest:
            raise DuplicateChangeRequest(other)


def _author(request: ChangeRequest, actor: Actor) -> bool:
    return actor_user(actor) is not None and request.author_id == actor.pk  # type: ignore[union-attr]


def _after_commit(request: ChangeRequest, *, impact: bool, notify: bool) -> None:
    pk = request.pk
    if impact:
        transaction.on_commit(lambda: _enqueue("rules.tasks.change_request_impact", pk, preview=True))
    if notify:
        transaction.on_commit(lambda: _enqueue("rules.tasks.change_request_notify", pk, preview=False))


def _enqueue(task: str, pk: int, *, preview: bool) -> None:
    """Queue a task for a request that is already saved. The request stands when the broker cannot be
    reached (the caller gets its answer, not a 500): the preview is marked failed, saying why, so that
    approvers do not wait for it; a lost notification is only logged."""
    try:
        task_queue(task, pk)
    except KombuError as exc:
        logger.error("could not queue %s for change request %s: %s", task, pk, exc)
        if preview:
            error = f"The impact preview could not be queued (the task broker is unreachable: {exc})."
            ChangeRequest.objects.filter(pk=pk).update(
                impact_status=ImpactStatus.FAILED,
                impact={"status": ImpactStatus.FAILED.value, "error": error[:2000]},
            )


# --- proposing -----------------------------------------------------------------------------------------


def change_request_hold(*, proposal: Proposal, actor: Actor, reason: str) -> ChangeRequest:
    """Record a change the gate held back as a pending request (called by ``config_change``, and by
    ``rules.governance.mcp_drift`` for an upstream's new tool definition, which waits for a person whatever
    its risk). ``DuplicateChangeRequest`` when an open request already proposes exactly this change."""
    changes = [change_document(c) for c in proposal.changes]
    with transaction.atomic():
        config_writers_lock()
        _refuse_duplicate(changes)
        request = ChangeRequest.objects.create(
            state=ChangeRequestState.PENDING,
            risk=ChangeRequestRisk.HIGH,
            author=actor_user(actor),
            author_name=actor_name(actor),
            reason=reason[:500] or "(no reason given)",
            base_revision=proposal.base_revision,
            changes=changes,
            risks=_risks_document(proposal.risks),
            impact_status=ImpactStatus.RUNNING,
        )
        event(request, "created", actor, message="needs_approval", count=len(changes))
        _after_commit(request, impact=True, notify=True)
    return request


def change_request_propose(*, document: dict[str, Any], actor: Actor, reason: str) -> ChangeRequest:
    """Propose a whole configuration document (the way a team with its rules in git does).

    A proposal with nothing high-risk is applied at once and recorded as an applied, low-risk request;
    a high-risk one waits for approval. ``NoChanges`` when it equals the live configuration,
    ``DuplicateChangeRequest`` when an open request already proposes the same change.
    """
    if not actor_may(actor, PROPOSE_PERMISSION):
        raise PermissionDenied(
            gettext("Only members of config_editors (or others with permission) may propose changes.")
        )
    if not reason.strip():
        raise ConfigError(["reason: give the reason for the change"])
    from rules.config.yaml_import import config_apply

    live = config_document()
    changes = config_diff(live, document)
    if not changes:
        raise NoChanges(gettext("The proposed configuration is the same as the live one."))
    base = revision_latest()
    result = config_apply(document=document, actor=actor, reason=reason)
    if result.change_request is not None:
        return result.change_request
    with transaction.atomic():
        request = ChangeRequest.objects.create(
            state=ChangeRequestState.APPLIED,
            risk=ChangeRequestRisk.LOW,
            author=actor_user(actor),
            author_name=actor_name(actor),
            reason=reason[:500],
            base_revision=base.number if base else 0,
            changes=[change_document(c) for c in changes],
            applied_at=timezone.now(),
            applied_revision=result.revision,
        )
        event(request, "applied", actor, message="applied_at_once")
    return request


def change_request_update(
    *, request: ChangeRequest, document: dict[str, Any], actor: Actor, reason: str | None = None
) -> ChangeRequest:
    """The author edits a pending request: its change is recomputed against the live configuration and
    every approval given so far is withdrawn (the approvers saw another change; its digest changes)."""
    with transaction.atomic():
        request = locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise not_open(request)
        if not _author(request, actor):
            raise PermissionDenied(gettext("Only the author may edit a change request."))
        latest = revision_latest()
        live = config_document()
        changes = config_diff(live, document)
        if not changes:
            raise NoChanges(gettext("The edited request would change nothing."))
        stored = [change_document(c) for c in changes]
        _refuse_duplicate(stored, besides=request.pk)
        risks = change_risks(live, document, changes)
        withdrawn = list(request.approvals.values_list("user__username", flat=True))
        request.approvals.all().delete()
        request.changes = stored
        request.risks = _risks_document(risks)
        request.risk = ChangeRequestRisk.HIGH if risks else ChangeRequestRisk.LOW
        request.base_revision = latest.number if latest else 0
        request.superseded_by = None
        request.failure = ""
        request.override_reason = ""
        request.impact = {}
        request.impact_status = ImpactStatus.RUNNING
        if reason:
            request.reason = reason[:500]
        request.save()
        if withdrawn:
            event(request, "edited", actor, message="approvals_withdrawn", users=", ".join(withdrawn))
        else:
            event(request, "edited", actor, message="no_approvals_to_withdraw")
        _after_commit(request, impact=True, notify=bool(withdrawn))
    return request


# --- deciding on it ------------------------------------------------------------------------------------


def change_request_approvals_required() -> int:
    return max(1, int(settings.ARBITER_REQUIRED_APPROVALS))


def _reviewed(request: ChangeRequest, digest: str) -> None:
    """Refuse to act on a locked request whose change is not the one the caller was shown (``digest``)."""
    current = change_request_digest(request.changes)
    if digest != current:
        raise ChangeRequestChanged(
            gettext(
                "Change request %(number)s changed since it was read: review its current change and "
                "approve that (its digest is given)."
            )
            % {"number": request.pk},
            extra={"digest": current, "diff": change_request_diff_rows(request)},
        )


def change_request_approve(
    *, request: ChangeRequest, actor: Actor, digest: str, reason: str = "", override_reason: str = ""
) -> ChangeRequest:
    """Approve, as a risk approver who is not the author, the change whose ``change_request_digest``
    is ``digest`` — what the approver was shown. ``ChangeRequestChanged`` (with the current digest and
    diff) when the request holds another change by now. The last approval needed applies it in the
    same transaction (or schedules it for its ``apply_at``). A request that breaks pinned regression
    cases needs an ``override_reason``."""
    # Self-approval is named as such even for an author who could not approve anyway.
    if request.author_id is not None and request.author_id == getattr(actor, "pk", None):
        raise SelfApprovalForbidden(gettext("The author of a change request cannot approve it."))
    if not actor_may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may approve change requests."))
    with transaction.atomic():
        request = locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise not_open(request)
        _reviewed(request, digest)
        broken = (request.impact or {}).get("broken_cases") or []
        if broken and not override_reason.strip():
            raise OverrideReasonRequired(
                gettext("The change breaks %(count)s pinned regression case(s); approving it needs an override reason.")
                % {"count": len(broken)},
                extra={"broken_cases": [case["id"] for case in broken]},
            )
        ChangeRequestApproval.objects.get_or_create(
            change_request=request, user=actor, defaults={"reason": reason[:2000]}
        )
        if override_reason.strip():
            request.override_reason = override_reason.strip()
            request.save(update_fields=["override_reason", "updated_at"])
        event(request, "approved", actor, reason)
        if request.approvals.count() < change_request_approvals_required():
            return request
        if request.apply_at is not None and request.apply_at > timezone.now():
            request.state = ChangeRequestState.APPROVED
            request.save(update_fields=["state", "updated_at"])
            event(request, "scheduled", actor, message="to_apply_at", at=request.apply_at.isoformat())
            return request
        refusal = apply_locked(request, actor)
    if refusal is not None:
        raise refusal
    return request


def change_request_reject(*, request: ChangeRequest, actor: Actor, reason: str = "") -> ChangeRequest:
    if not actor_may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may reject change requests."))
    with transaction.atomic():
        request = locked(request)
        if request.state not in OPEN_STATES:
            raise not_open(request)
        request.state = ChangeRequestState.REJECTED
        request.save(update_fields=["state", "updated_at"])
        event(request, "rejected", actor, reason)
    return request


def change_request_withdraw(*, request: ChangeRequest, actor: Actor, reason: str = "") -> ChangeRequest:
    with transaction.atomic():
        request = locked(request)
        if request.state not in OPEN_STATES:
            raise not_open(request)
        if not _author(request, actor):
            raise PermissionDenied(gettext("Only the author may withdraw a change request."))
        request.state = ChangeRequestState.WITHDRAWN
        request.save(update_fields=["state", "updated_at"])
        event(request, "withdrawn", actor, reason)
    return request


def change_request_break_glass(*, request: ChangeRequest, actor: Actor, digest: str, reason: str) -> ChangeRequest:
    """Apply an open request at once, without approval, for an emergency (in the same locked
    transaction): the change whose digest is ``digest``, what the user was shown, as for an approval.
    The request then carries an open retroactive review until a second person acknowledges it."""
    if not actor_may(actor, BREAK_GLASS_PERMISSION):
        raise PermissionDenied(gettext("Only users with the break-glass permission may apply a request at once."))
    if not reason.strip():
        raise ConfigError(["reason: say why the change cannot wait for approval"])
    with transaction.atomic():
        request = locked(request)
        if request.state not in OPEN_STATES:
            raise not_open(request)
        _reviewed(request, digest)
        request.break_glass_by = actor_user(actor)
        request.break_glass_reason = reason.strip()
        request.save(update_fields=["break_glass_by", "break_glass_reason", "updated_at"])
        event(request, "break_glass", actor, reason.strip())
        refusal = apply_locked(request, actor)
    if refusal is not None:
        raise refusal
    return request


def change_request_acknowledge(*, request: ChangeRequest, actor: Actor, note: str = "") -> ChangeRequest:
    """A second person has looked at a break-glass change: its retroactive review is closed."""
    if not actor_may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may close a retroactive review."))
    with transaction.atomic():
        request = locked(request)
        if not request.review_open:
            raise NotPending(
                gettext("Change request %(number)s has no open retroactive review.") % {"number": request.pk}
            )
        if request.break_glass_by_id == actor.pk or request.author_id == actor.pk:  # type: ignore[union-attr]
            raise SelfApprovalForbidden(gettext("A second person must review a break-glass change."))
        request.review_acknowledged_by = actor  # type: ignore[assignment]
        request.review_acknowledged_at = timezone.now()
        request.save(update_fields=["review_acknowledged_by", "review_acknowledged_at", "updated_at"])
        event(request, "review_acknowledged", actor, note)
    return request


def change_request_schedule(*, request: ChangeRequest, actor: Actor, apply_at: Any) -> ChangeRequest:
    """The author sets when an approved request goes live (``None``: as soon as it is approved)."""
    with transaction.atomic():
        request = locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise not_open(request)
        if not _author(request, actor):
            raise PermissionDenied(gettext("Only the author may schedule a change request."))
        request.apply_at = apply_at
        request.save(update_fields=["apply_at", "updated_at"])
        if apply_at:
            event(request, "scheduled", actor, message="to_apply_at", at=apply_at.isoformat())
        else:
            event(request, "scheduled", actor, message="as_approved")
    return request

"""Change requests: propose, edit, approve, reject, withdraw, apply, break glass.

Four-eyes rules are enforced here, whatever the caller (admin, API, shell): a request needs
``settings.ARBITER_REQUIRED_APPROVALS`` approvals from users other than its author who hold the
``rules.approve_changerequest`` permission (the ``risk_approvers`` group; superusers hold every
permission). Reaching the required approvals applies it at once, unless it has an ``apply_at`` in
the future (then ``change_requests_apply_due``, run by Celery beat, applies it on time). Applying
re-checks that no record it touches changed since it was made (else it is ``superseded``) and
writes it through the configuration-change seam as one revision whose history rows name it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import PermissionsMixin
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext
from kombu.exceptions import KombuError

from rules.configio.diff import KIND_LABELS, RecordChange, config_diff, same
from rules.errors import (
    ChangeRequestSuperseded,
    ConfigError,
    NoChanges,
    NotPending,
    OverrideReasonRequired,
    PermissionDenied,
    SelfApprovalForbidden,
)
from rules.models import (
    OPEN_STATES,
    ChangeRequest,
    ChangeRequestApproval,
    ChangeRequestEvent,
    ChangeRequestRisk,
    ChangeRequestState,
    ImpactStatus,
)
from rules.risk import RiskReason, change_risks
from rules.selectors import config_document, revision_latest
from rules.services.revisions import Actor, Proposal

logger = logging.getLogger(__name__)

APPROVE_PERMISSION = "rules.approve_changerequest"
PROPOSE_PERMISSION = "rules.add_changerequest"
BREAK_GLASS_PERMISSION = "rules.break_glass_changerequest"


# --- the proposal as data ------------------------------------------------------------------------------


def change_document(change: RecordChange) -> dict[str, Any]:
    """How one record change is stored on a request: enough to apply it and to check it is still current."""
    return {
        "action": change.action,
        "kind": change.kind,
        "key": change.key,
        "point": change.point,
        "before": _without_rules(change.kind, change.old),
        "after": _without_rules(change.kind, change.new),
    }


def _without_rules(kind: str, record: dict[str, Any] | None) -> dict[str, Any] | None:
    # A point's rules are records of their own, diffed and applied one by one.
    if record is None or kind != "point":
        return record
    return {k: v for k, v in record.items() if k != "rules"}


def change_record_label(change: Mapping[str, Any]) -> str:
    point = change.get("point") or ""
    return f"{KIND_LABELS[change['kind']]} {point + '.' if point else ''}{change['key']}"


@dataclass(frozen=True)
class DiffRow:
    record: str
    field: str
    before: Any
    after: Any


def change_request_diff(request: ChangeRequest) -> list[DiffRow]:
    """The request's change as rows of (record, field, before, after), for people and the API."""
    rows: list[DiffRow] = []
    for change in request.changes:
        label = change_record_label(change)
        before, after = change["before"] or {}, change["after"] or {}
        names = [*before, *(k for k in after if k not in before)]
        for name in names:
            if name == "key":
                continue
            old, new = before.get(name), after.get(name)
            if change["action"] == "change" and same(old, new):
                continue
            rows.append(DiffRow(label, name, old, new))
    return rows


def _find(document: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record a change is about, as ``document`` has it (a point without its rules)."""
    kind, key = change["kind"], change["key"]
    if kind == "rule":
        point = next((p for p in document.get("points", []) if p["key"] == change["point"]), None)
        return next((r for r in point.get("rules", []) if r["key"] == key), None) if point else None
    section = {"threshold": "thresholds", "keyword_list": "keyword_lists", "point": "points", "machine": "machines"}
    found = next((r for r in document.get(section[kind], []) if r["key"] == key), None)
    return _without_rules(kind, found)


def change_request_stale_record(request: ChangeRequest, document: Mapping[str, Any]) -> str | None:
    """The first record the request touches that ``document`` no longer has as it was, if any."""
    for change in request.changes:
        if not same(_find(document, change), change["before"]):
            return change_record_label(change)
    return None


def config_document_apply(live: Mapping[str, Any], changes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``live`` with the request's record changes made, in the canonical order."""
    sections = {
        name: {r["key"]: dict(r) for r in live.get(name, [])}
        for name in ("thresholds", "keyword_lists", "points", "machines")
    }
    rules = {p["key"]: {r["key"]: r for r in p.get("rules", [])} for p in live.get("points", [])}
    section_of = {"threshold": "thresholds", "keyword_list": "keyword_lists", "point": "points", "machine": "machines"}
    for change in changes:
        kind, key, after = change["kind"], change["key"], change["after"]
        if kind == "rule":
            point_rules = rules.setdefault(change["point"], {})
            if after is None:
                point_rules.pop(key, None)
            else:
                point_rules[key] = after
            continue
        records = sections[section_of[kind]]
        if after is None:
            records.pop(key, None)
            if kind == "point":
                rules.pop(key, None)
        else:
            records[key] = dict(after)
    points = []
    for key in sorted(sections["points"]):
        point = dict(sections["points"][key])
        point["rules"] = sorted(rules.get(key, {}).values(), key=lambda r: (r["priority"], r["key"]))
        points.append(point)
    return {
        "version": live.get("version", 1),
        "thresholds": [sections["thresholds"][k] for k in sorted(sections["thresholds"])],
        "keyword_lists": [sections["keyword_lists"][k] for k in sorted(sections["keyword_lists"])],
        "points": points,
        "machines": [sections["machines"][k] for k in sorted(sections["machines"])],
    }


def _risks_document(risks: Iterable[RiskReason]) -> list[dict[str, Any]]:
    return [r.document() for r in risks]  # with its message id, so the admin renders it in its reader's language


# --- who may do what -----------------------------------------------------------------------------------


def _user(actor: Actor) -> Any:
    return actor if actor is not None and getattr(actor, "pk", None) else None


def _name(actor: Actor) -> str:
    return actor.get_username() if isinstance(actor, AbstractBaseUser) else "system"


def _may(actor: Actor, permission: str) -> bool:
    return isinstance(actor, PermissionsMixin) and bool(actor.is_active) and actor.has_perm(permission)


def _event(request: ChangeRequest, kind: str, actor: Actor, detail: str = "") -> None:
    ChangeRequestEvent.objects.create(
        change_request=request, user=_user(actor), user_name=_name(actor), kind=kind, detail=detail
    )


def _locked(request: ChangeRequest) -> ChangeRequest:
    return ChangeRequest.objects.select_for_update().get(pk=request.pk)


def _not_open(request: ChangeRequest, what: str = "pending") -> Exception:
    """The refusal for a request that can no longer be decided on: superseded ones say by what."""
    if request.state == ChangeRequestState.SUPERSEDED:
        record = (request.superseded_by or {}).get("record", "a record it touches")
        return ChangeRequestSuperseded(
            f"Change request {request.pk} is superseded: {record} changed since it was made.",
            extra={"superseded_by": request.superseded_by},
        )
    return NotPending(f"Change request {request.pk} is {request.state}, not {what}.")


def _after_commit(request: ChangeRequest, *, impact: bool, notify: bool) -> None:
    from rules import tasks

    pk = request.pk
    if impact:
        transaction.on_commit(lambda: _enqueue(tasks.change_request_impact, pk, preview=True))
    if notify:
        transaction.on_commit(lambda: _enqueue(tasks.change_request_notify, pk, preview=False))


def _enqueue(task: Any, pk: int, *, preview: bool) -> None:
    """Queue a task for a request that is already saved. The request stands when the broker cannot be
    reached (the caller gets its answer, not a 500): the preview is marked failed, saying why, so that
    approvers do not wait for it; a lost notification is only logged."""
    try:
        task.delay(pk)
    except KombuError as exc:
        logger.error("could not queue %s for change request %s: %s", task.name, pk, exc)
        if preview:
            error = f"The impact preview could not be queued (the task broker is unreachable: {exc})."
            ChangeRequest.objects.filter(pk=pk).update(
                impact_status=ImpactStatus.FAILED,
                impact={"status": ImpactStatus.FAILED.value, "error": error[:2000]},
            )


# --- proposing -----------------------------------------------------------------------------------------


def change_request_hold(*, proposal: Proposal, actor: Actor, reason: str) -> ChangeRequest:
    """Record a change the gate held back as a pending request (called by ``config_change`` only)."""
    with transaction.atomic():
        request = ChangeRequest.objects.create(
            state=ChangeRequestState.PENDING,
            risk=ChangeRequestRisk.HIGH,
            author=_user(actor),
            author_name=_name(actor),
            reason=reason[:500] or "(no reason given)",
            base_revision=proposal.base_revision,
            changes=[change_document(c) for c in proposal.changes],
            risks=_risks_document(proposal.risks),
            impact_status=ImpactStatus.RUNNING,
        )
        _event(request, "created", actor, f"{len(proposal.changes)} record(s); needs approval")
        _after_commit(request, impact=True, notify=True)
    return request


def change_request_propose(*, document: dict[str, Any], actor: Actor, reason: str) -> ChangeRequest:
    """Propose a whole configuration document (the way a team with its rules in git does).

    A proposal with nothing high-risk is applied at once and recorded as an applied, low-risk request;
    a high-risk one waits for approval. ``NoChanges`` when it equals the live configuration.
    """
    if not _may(actor, PROPOSE_PERMISSION):
        raise PermissionDenied(
            gettext("Only members of config_editors (or others with permission) may propose changes.")
        )
    if not reason.strip():
        raise ConfigError(["reason: give the reason for the change"])
    from rules.configio.apply import config_apply

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
            author=_user(actor),
            author_name=_name(actor),
            reason=reason[:500],
            base_revision=base.number if base else 0,
            changes=[change_document(c) for c in changes],
            applied_at=timezone.now(),
            applied_revision=result.revision,
        )
        _event(request, "applied", actor, "nothing in it needs approval: applied at once")
    return request


def change_request_update(
    *, request: ChangeRequest, document: dict[str, Any], actor: Actor, reason: str | None = None
) -> ChangeRequest:
    """The author edits a pending request: its change is recomputed against the live configuration and
    every approval given so far is withdrawn (the approvers saw another change)."""
    with transaction.atomic():
        request = _locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise _not_open(request)
        if _user(actor) is None or request.author_id != actor.pk:  # type: ignore[union-attr]
            raise PermissionDenied(gettext("Only the author may edit a change request."))
        latest = revision_latest()
        live = config_document()
        changes = config_diff(live, document)
        if not changes:
            raise NoChanges(gettext("The edited request would change nothing."))
        risks = change_risks(live, document, changes)
        withdrawn = list(request.approvals.values_list("user__username", flat=True))
        request.approvals.all().delete()
        request.changes = [change_document(c) for c in changes]
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
        detail = f"approvals withdrawn: {', '.join(withdrawn)}" if withdrawn else "no approvals to withdraw"
        _event(request, "edited", actor, detail)
        _after_commit(request, impact=True, notify=bool(withdrawn))
    return request


# --- deciding on it ------------------------------------------------------------------------------------


def change_request_approvals_required() -> int:
    return max(1, int(settings.ARBITER_REQUIRED_APPROVALS))


def change_request_approve(
    *, request: ChangeRequest, actor: Actor, reason: str = "", override_reason: str = ""
) -> ChangeRequest:
    """Approve as a risk approver who is not the author; the last approval needed applies it (or
    schedules it for its ``apply_at``). A request that breaks pinned regression cases needs an
    ``override_reason``."""
    # Self-approval is named as such even for an author who could not approve anyway.
    if request.author_id is not None and request.author_id == getattr(actor, "pk", None):
        raise SelfApprovalForbidden(gettext("The author of a change request cannot approve it."))
    if not _may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may approve change requests."))
    with transaction.atomic():
        request = _locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise _not_open(request)
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
        _event(request, "approved", actor, reason)
        if request.approvals.count() < change_request_approvals_required():
            return request
        if request.apply_at is not None and request.apply_at > timezone.now():
            request.state = ChangeRequestState.APPROVED
            request.save(update_fields=["state", "updated_at"])
            _event(request, "scheduled", actor, f"to apply at {request.apply_at.isoformat()}")
            return request
    return change_request_apply(request=request, actor=actor)


def change_request_reject(*, request: ChangeRequest, actor: Actor, reason: str = "") -> ChangeRequest:
    if not _may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may reject change requests."))
    with transaction.atomic():
        request = _locked(request)
        if request.state not in OPEN_STATES:
            raise _not_open(request)
        request.state = ChangeRequestState.REJECTED
        request.save(update_fields=["state", "updated_at"])
        _event(request, "rejected", actor, reason)
    return request


def change_request_withdraw(*, request: ChangeRequest, actor: Actor, reason: str = "") -> ChangeRequest:
    with transaction.atomic():
        request = _locked(request)
        if request.state not in OPEN_STATES:
            raise _not_open(request)
        if _user(actor) is None or request.author_id != actor.pk:  # type: ignore[union-attr]
            raise PermissionDenied(gettext("Only the author may withdraw a change request."))
        request.state = ChangeRequestState.WITHDRAWN
        request.save(update_fields=["state", "updated_at"])
        _event(request, "withdrawn", actor, reason)
    return request


# --- applying ------------------------------------------------------------------------------------------


def _supersede(request: ChangeRequest, record: str, revision: int | None) -> None:
    request.state = ChangeRequestState.SUPERSEDED
    request.superseded_by = {"record": record, "revision": revision}
    request.save(update_fields=["state", "superseded_by", "updated_at"])
    _event(request, "superseded", None, f"{record} changed since the request was made (revision {revision})")


def change_request_apply(*, request: ChangeRequest, actor: Actor) -> ChangeRequest:
    """Apply an approved (or break-glass) request as one revision, if nothing it touches changed since.

    A request that cannot be applied stays unapplied and says why: ``superseded`` (with the record
    that changed; ``ChangeRequestSuperseded`` is raised) or, when the configuration refuses it (it no
    longer compiles, a record is refused), in ``failure``.
    """
    from rules.configio.apply import config_apply

    request.refresh_from_db()
    if request.state == ChangeRequestState.APPLIED:
        return request  # applied meanwhile (a retried task): applying twice would be wrong
    live = config_document()
    stale = change_request_stale_record(request, live)
    if stale is not None:
        latest = revision_latest()
        _supersede(request, stale, latest.number if latest else None)
        raise ChangeRequestSuperseded(
            gettext(
                "Change request %(number)s can no longer be applied as it is: %(record)s changed since it was made."
            )
            % {"number": request.pk, "record": stale},
            extra={"superseded_by": request.superseded_by},
        )
    author = request.author
    approvers = ", ".join(a.user.get_username() for a in request.approvals.select_related("user"))
    how = f"approved by {approvers}" if approvers else f"break glass by {_name(actor)}"
    reason = f"change request {request.pk}: {request.reason} ({how})"[:500]
    try:
        result = config_apply(
            document=config_document_apply(live, request.changes), actor=author, reason=reason, change_request=request
        )
    except ConfigError as exc:
        request.failure = "; ".join(exc.problems)
        request.save(update_fields=["failure", "updated_at"])
        _event(request, "failed", actor, request.failure)
        raise
    request.state = ChangeRequestState.APPLIED
    request.applied_at = timezone.now()
    request.applied_revision = result.revision
    request.failure = ""
    request.save(update_fields=["state", "applied_at", "applied_revision", "failure", "updated_at"])
    _event(request, "applied", actor, f"as revision {result.revision}")
    return request


def change_request_break_glass(*, request: ChangeRequest, actor: Actor, reason: str) -> ChangeRequest:
    """Apply a pending request at once, without approval, for an emergency. The request then carries
    an open retroactive review until a second person acknowledges it."""
    if not _may(actor, BREAK_GLASS_PERMISSION):
        raise PermissionDenied(gettext("Only users with the break-glass permission may apply a request at once."))
    if not reason.strip():
        raise ConfigError(["reason: say why the change cannot wait for approval"])
    with transaction.atomic():
        request = _locked(request)
        if request.state not in OPEN_STATES:
            raise _not_open(request)
        request.break_glass_by = _user(actor)
        request.break_glass_reason = reason.strip()
        request.save(update_fields=["break_glass_by", "break_glass_reason", "updated_at"])
        _event(request, "break_glass", actor, reason.strip())
    return change_request_apply(request=request, actor=actor)


def change_request_acknowledge(*, request: ChangeRequest, actor: Actor, note: str = "") -> ChangeRequest:
    """A second person has looked at a break-glass change: its retroactive review is closed."""
    if not _may(actor, APPROVE_PERMISSION):
        raise PermissionDenied(gettext("Only members of risk_approvers may close a retroactive review."))
    with transaction.atomic():
        request = _locked(request)
        if not request.review_open:
            raise NotPending(
                gettext("Change request %(number)s has no open retroactive review.") % {"number": request.pk}
            )
        if request.break_glass_by_id == actor.pk or request.author_id == actor.pk:  # type: ignore[union-attr]
            raise SelfApprovalForbidden(gettext("A second person must review a break-glass change."))
        request.review_acknowledged_by = actor  # type: ignore[assignment]
        request.review_acknowledged_at = timezone.now()
        request.save(update_fields=["review_acknowledged_by", "review_acknowledged_at", "updated_at"])
        _event(request, "review_acknowledged", actor, note)
    return request


def change_request_schedule(*, request: ChangeRequest, actor: Actor, apply_at: Any) -> ChangeRequest:
    """The author sets when an approved request goes live (``None``: as soon as it is approved)."""
    with transaction.atomic():
        request = _locked(request)
        if request.state != ChangeRequestState.PENDING:
            raise _not_open(request)
        if _user(actor) is None or request.author_id != actor.pk:  # type: ignore[union-attr]
            raise PermissionDenied(gettext("Only the author may schedule a change request."))
        request.apply_at = apply_at
        request.save(update_fields=["apply_at", "updated_at"])
        _event(request, "scheduled", actor, f"to apply at {apply_at.isoformat()}" if apply_at else "as approved")
    return request


def change_requests_apply_due(*, now: Any = None) -> list[int]:
    """Apply every approved request whose time has come (Celery beat). Idempotent: an applied request
    is never applied again; a superseded one is marked and skipped."""
    now = now or timezone.now()
    applied = []
    due = ChangeRequest.objects.filter(state=ChangeRequestState.APPROVED, apply_at__lte=now).order_by("apply_at", "pk")
    for pk in list(due.values_list("pk", flat=True)):
        request = ChangeRequest.objects.get(pk=pk)
        try:
            change_request_apply(request=request, actor=None)
        except (ChangeRequestSuperseded, ConfigError) as exc:
            logger.warning("change request %s was not applied: %s", pk, exc)
            continue
        applied.append(pk)
    return applied


def change_requests_supersede(
    *, snapshot: Mapping[str, Any], revision: int, applying: ChangeRequest | None = None
) -> list[int]:
    """After a revision: mark every open request that touches a record the revision changed."""
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

"""E-mails to people: approvers learn that a change request waits for them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q

from rules.models import ChangeRequest, ChangeRequestState

APPROVERS_GROUP = "risk_approvers"


def change_request_approver_emails(request: ChangeRequest) -> list[str]:
    """E-mail addresses of active approvers (the group, and users holding the permission directly),
    the author excluded."""
    User = get_user_model()
    users = (
        User.objects.filter(is_active=True)
        .filter(
            Q(groups__name=APPROVERS_GROUP)
            | Q(user_permissions__codename="approve_changerequest", user_permissions__content_type__app_label="rules")
        )
        .exclude(email="")
        .distinct()
    )
    if request.author_id is not None:
        users = users.exclude(pk=request.author_id)
    return sorted({u.email for u in users})


def change_request_notify_approvers(*, request_id: int) -> int:
    request = ChangeRequest.objects.filter(pk=request_id).first()
    if request is None or request.state != ChangeRequestState.PENDING:
        return 0
    recipients = change_request_approver_emails(request)
    if not recipients:
        return 0
    records = ", ".join(sorted({r["record"] for r in request.risks})) or "configuration"
    base = settings.ARBITER_BASE_URL.rstrip("/")
    send_mail(
        subject=f"[Arbiter] Change request {request.pk} waits for your approval",
        message=(
            f"{request.author_name} proposes a high-risk change: {request.reason}\n\n"
            f"It touches: {records}.\n\n"
            f"Review it: {base}/admin/rules/changerequest/{request.pk}/change/\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )
    return len(recipients)


def staff_to_notify() -> list[str]:
    """E-mail addresses of active staff users."""
    User = get_user_model()
    return sorted(
        set(User.objects.filter(is_active=True, is_staff=True).exclude(email="").values_list("email", flat=True))
    )


def decision_map_snapshot_mail(*, snapshot_id: int) -> int:
    """E-mail a snapshot of the decision-point map to staff, with what changed since the snapshot before
    it; returns how many were written to. A snapshot already mailed is not mailed again."""
    from django.utils import timezone

    from rules.models import DecisionMapSnapshot
    from rules.reports.snapshots import snapshot_text

    snapshot = DecisionMapSnapshot.objects.filter(pk=snapshot_id, mailed_at__isnull=True).first()
    if snapshot is None:
        return 0
    previous = (
        DecisionMapSnapshot.objects.filter(taken_at__lte=snapshot.taken_at)
        .exclude(pk=snapshot.pk)
        .order_by("-taken_at", "-pk")
        .first()
    )
    recipients = staff_to_notify()
    if recipients:
        report = snapshot.report
        summary = report["governance"]
        base = settings.ARBITER_BASE_URL.rstrip("/")
        send_mail(
            subject=(
                f"[Arbiter] Decision-point map of {snapshot.taken_at:%Y-%m-%d}: {summary['controlled']} controlled, "
                f"{summary['partial']} partial, {summary['naked']} naked"
            ),
            message=snapshot_text(
                report,
                previous=previous.report if previous is not None else None,
                previous_taken_at=previous.report["generated_at"] if previous is not None else "",
                link=f"{base}/admin/rules/decisionrecord/map/",
            ),
            from_email=None,
            recipient_list=recipients,
        )
    DecisionMapSnapshot.objects.filter(pk=snapshot.pk).update(mailed_at=timezone.now(), mailed_to=len(recipients))
    return len(recipients)

"""E-mails to people: approvers learn that a change request waits for them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q

from rules.models import ChangeRequest, ChangeRequestState

APPROVERS_GROUP = "risk_approvers"


def approvers_to_notify(request: ChangeRequest) -> list[str]:
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
    recipients = approvers_to_notify(request)
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

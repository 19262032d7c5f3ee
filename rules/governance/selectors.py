"""Reads of governance: open change requests touching a record, what waits for a user, break-glass
reviews still open, and the staff user behind an API token."""

from __future__ import annotations

from typing import Any

from rules.models import OPEN_STATES, ChangeRequest, ChangeRequestState, StaffToken


def staff_user_by_token(*, token: str) -> Any:
    """The active staff user whose API token this is, or None."""
    from decision_service.tokens import token_hash

    found = StaffToken.objects.select_related("user").filter(token_hash=token_hash(token)).first()
    if found is None or not found.user.is_active or not found.user.is_staff:
        return None
    return found.user


def change_requests_touching(*, kind: str, key: str, point: str = "") -> list[ChangeRequest]:
    """Open change requests that would change this record."""
    return [
        request
        for request in ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("pk")
        if any(c["kind"] == kind and c["key"] == key and (c.get("point") or "") == point for c in request.changes)
    ]


def change_requests_waiting_for(*, user: Any) -> Any:
    """Pending requests this user could approve and has not: not their own, not approved by them yet."""
    if not (user.is_active and user.has_perm("rules.approve_changerequest")):
        return ChangeRequest.objects.none()
    return (
        ChangeRequest.objects.filter(state=ChangeRequestState.PENDING)
        .exclude(author_id=user.pk)
        .exclude(approvals__user_id=user.pk)
        .order_by("created_at", "pk")
    )


def change_requests_under_review() -> Any:
    """Requests applied by break glass whose retroactive review nobody has acknowledged yet."""
    return ChangeRequest.objects.filter(break_glass_by__isnull=False, review_acknowledged_at__isnull=True).order_by(
        "created_at", "pk"
    )

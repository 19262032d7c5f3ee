"""Which change request actions a user may take: the one answer the admin page (and any other caller)
asks, instead of working the four-eyes rules out itself. Each service still checks its own rule under
the request's lock; this says in advance what those checks would allow, so a page shows only buttons
that work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rules.config.revisions import Actor
from rules.governance.change_request_events import actor_may
from rules.governance.change_requests import APPROVE_PERMISSION, BREAK_GLASS_PERMISSION
from rules.models import ChangeRequest, ChangeRequestState


@dataclass(frozen=True)
class ChangeRequestActions:
    approve: bool
    reject: bool
    withdraw: bool
    edit: bool
    break_glass: bool
    acknowledge: bool
    # A pending request whose approver is its author: the page says why there is no approve button.
    approver_is_author: bool


def change_request_actions(*, request: ChangeRequest, actor: Actor) -> ChangeRequestActions:
    """What ``actor`` may do with ``request`` now (the rules of ``rules.governance.change_requests``)."""
    user: Any = actor
    pk = getattr(user, "pk", None)
    is_author = request.author_id is not None and request.author_id == pk
    approver = actor_may(actor, APPROVE_PERMISSION)
    pending = request.state == ChangeRequestState.PENDING
    approved_by_me = pk is not None and request.approvals.filter(user_id=pk).exists()
    return ChangeRequestActions(
        approve=pending and approver and not is_author and not approved_by_me,
        reject=request.is_open and approver,
        withdraw=request.is_open and is_author,
        edit=pending and is_author,
        break_glass=request.is_open and actor_may(actor, BREAK_GLASS_PERMISSION),
        acknowledge=request.review_open and approver and pk not in (request.break_glass_by_id, request.author_id),
        approver_is_author=pending and approver and is_author,
    )

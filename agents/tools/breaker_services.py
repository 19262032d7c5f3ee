"""People opening and closing a tool's breaker by hand, and what the admin and staff API show of breakers.

A breaker opened by hand refuses every call of the tool (``circuit_open``) and no time or trial closes it:
only a person does. Closing (one opened by hand or by failures) forgets the failures counted so far.
Each change is recorded (``BreakerChange``: who, what, why) in the transaction that makes it (with the
Redis store, the state changes in Redis just before that transaction commits). Both need
the ``agents.operate_breakers`` permission, whichever way they are asked for (admin page or staff API),
and a reason.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext

from agents.tools.breaker_backend import store
from agents.tools.gate import state_changed
from agents.tools.models import BreakerChange
from decision_service.errors import InvalidRequest, NotFound, PermissionDenied
from rules.models import ToolContract

BREAKER_PERMISSION = "agents.operate_breakers"
OPEN, CLOSE = "open", "close"
ACTIONS = (OPEN, CLOSE)
REASON_MAX = 2000


def breakers_operate_allowed(user: Any) -> bool:
    return bool(getattr(user, "is_active", False)) and bool(user.has_perm(BREAKER_PERMISSION))


def breaker_change(*, tool: str, action: str, user: Any, reason: str) -> BreakerChange:
    """Open (``open``) or close (``close``) ``tool``'s breaker by hand, recording who and why."""
    if not breakers_operate_allowed(user):
        raise PermissionDenied(gettext("Opening and closing breakers needs the %s permission.") % BREAKER_PERMISSION)
    reason = (reason or "").strip()
    problems: dict[str, list[str]] = {}
    if action not in ACTIONS:
        problems["action"] = [gettext("One of: open, close.")]
    if not reason:
        problems["reason"] = [gettext("Say why the breaker is opened or closed.")]
    elif len(reason) > REASON_MAX:
        problems["reason"] = [gettext("At most %d characters.") % REASON_MAX]
    if problems:
        raise InvalidRequest(gettext("The breaker change is not valid."), errors=problems)
    contract = ToolContract.objects.filter(name=tool).values("circuit_breaker").first()
    if contract is None:
        raise NotFound(gettext("No tool contract is named %s.") % tool)
    if action == OPEN and contract["circuit_breaker"] is None:
        # The gate does not look a tool without a breaker (nor a limit) up: opening it would do nothing.
        message = gettext("%s has no circuit breaker in its contract: give it one first.") % tool
        raise InvalidRequest(message, errors={"action": [message]})
    with transaction.atomic():
        change = BreakerChange.objects.create(
            tool=tool, action=action, actor=f"operator:{user.get_username()}", user=user, reason=reason
        )
        outcome = store().force(tool, opened=action == OPEN)
    state_changed(tool, outcome)
    return change

"""The staff API of tools' breakers: list each tool's breaker, open or close one by hand.

Staff API tokens only (``StaffApi``). Listing asks for what the admin's breaker page asks for
(``agents.view_toolbreaker``, or ``agents.operate_breakers``); opening and closing for
``agents.operate_breakers`` (in the service, with the reason it records).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from agents.tools.breaker_backend import store
from agents.tools.breaker_selectors import BreakerRow, breaker_row, breakers_overview, breakers_view_allowed
from agents.tools.breaker_services import REASON_MAX, breaker_change
from agents.tools.models import BreakerChange
from decision_service.api.base import StaffApi
from decision_service.api.fields import StrictCharField, StrictSerializer


def _ms_time(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def breaker_item(row: BreakerRow) -> dict[str, Any]:
    s = row.snapshot
    return {
        "tool": row.tool,
        "state": s.state,
        "forced": s.forced,
        "failures": s.failures,
        "in_flight": s.in_flight,
        "opened_at": _ms_time(s.opened_at_ms),
        "retry_after_ms": s.retry_after_ms,
        "circuit_breaker": row.breaker,
        "max_concurrent": row.max_concurrent,
        "recent_failures": row.recent,
        "recent_seconds": row.recent_seconds,
    }


def change_item(change: BreakerChange) -> dict[str, Any]:
    return {
        "id": change.pk,
        "tool": change.tool,
        "action": change.action,
        "actor": change.actor,
        "reason": change.reason,
        "created_at": change.created_at.isoformat().replace("+00:00", "Z"),
    }


class _ChangeSerializer(StrictSerializer):
    action = StrictCharField(max_length=16)  # open | close: the service says which are known
    reason = StrictCharField(max_length=REASON_MAX)


class BreakerListApi(StaffApi):
    def get(self, request: Request) -> Response:
        if not breakers_view_allowed(request.user):
            raise exceptions.PermissionDenied("This needs the agents.view_toolbreaker permission.")
        return Response({"store": store().name, "breakers": [breaker_item(row) for row in breakers_overview()]})


class BreakerChangeApi(StaffApi):
    serializer_class = _ChangeSerializer

    def post(self, request: Request, name: str) -> Response:
        serializer = self.serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        change = breaker_change(tool=name, action=data["action"], user=request.user, reason=data["reason"])
        return Response({"breaker": breaker_item(breaker_row(name)), "change": change_item(change)})

"""The staff API of tool-call approvals: approve or reject the call a session in the human queue waits
for. Staff API tokens only (``StaffApi``); the rules (permission, claim, one decision) are the services'
(``agents.tools.approvals``)."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from agents.queue.apis import _valid
from agents.sessions.models import Session
from agents.tools.approvals import approval_decide_for_session
from agents.tools.models import ToolCall
from decision_service.api.base import StaffApi
from decision_service.api.fields import StrictCharField, StrictSerializer


class _ApproveSerializer(StrictSerializer):
    note = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")


class _RejectSerializer(StrictSerializer):
    note = StrictCharField(max_length=2000)


def decision_body(call: ToolCall) -> dict[str, Any]:
    """A decided call and where its session is now (back in the state the call was asked in)."""
    session = Session.objects.only("key", "state", "seq").get(pk=call.session_id)
    return {
        "id": call.session_id,
        "session_id": session.key,
        "operation_id": call.operation_id,
        "tool": call.tool,
        "status": call.status,
        "decided_by": call.decided_by.get_username() if call.decided_by else None,
        "note": call.decision_note,
        "decided_at": call.decided_at,
        "state": session.state,
        "seq": session.seq,
    }


class QueueApproveApi(StaffApi):
    serializer_class = _ApproveSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        call = approval_decide_for_session(session_pk=session_pk, user=request.user, approve=True, note=data["note"])
        return Response(decision_body(call))


class QueueRejectApi(StaffApi):
    serializer_class = _RejectSerializer

    def post(self, request: Request, session_pk: int) -> Response:
        data = _valid(self.serializer_class, request)
        call = approval_decide_for_session(session_pk=session_pk, user=request.user, approve=False, note=data["note"])
        return Response(decision_body(call))

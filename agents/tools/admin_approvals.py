"""The human queue page with the approval of proposed tool calls: approve and reject are two more steps
of the queue page, through ``agents.tools.approvals``. The queue admin (``agents.queue.admin``) shows the
proposed call (asked through ``human_queue_proposed_calls``) but does not import this room, which is above
it: this admin takes its place for ``Session``, as the queue admin extends the sessions admin."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext

from agents.queue.admin import SessionQueueAdmin
from agents.sessions.models import Session
from agents.tools.approvals import approval_allowed, approval_decide_for_session


class SessionApprovalAdmin(SessionQueueAdmin):
    def approvals_allowed(self, request: HttpRequest) -> bool:
        return approval_allowed(request.user)

    def human_queue_step(self, request: HttpRequest, *, pk: int, step: str, key: str, note: str, state: str) -> str:
        if step not in ("approve", "reject"):
            return super().human_queue_step(request, pk=pk, step=step, key=key, note=note, state=state)
        approve = step == "approve"
        call = approval_decide_for_session(session_pk=pk, user=request.user, approve=approve, note=note)
        done = (
            gettext(
                "The call of %(tool)s (operation %(operation)s) is approved; session %(session)s is back in %(state)s."
            )
            if approve
            else gettext(
                "The call of %(tool)s (operation %(operation)s) is rejected; session %(session)s is back in %(state)s."
            )
        )
        return done % {"tool": call.tool, "operation": call.operation_id, "session": key, "state": call.state}


if admin.site.is_registered(Session):
    admin.site.unregister(Session)
admin.site.register(Session, SessionApprovalAdmin)

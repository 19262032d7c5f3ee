"""The human queue's admin page: the session admin with the queue's list and its steps (claim, release,
return, resolve), each through the queue services. Registered for ``Session`` here, as the queue builds
on sessions: ``agents.sessions.admin.sessions.SessionAdmin`` holds the list and the session page."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.queue.selectors import (
    CLAIMED,
    MINE,
    QUEUE_REASONS,
    UNCLAIMED,
    human_queue_list,
    human_queue_proposed_calls,
)
from agents.queue.services import queue_claim, queue_release, queue_resolve, queue_return, queue_work_allowed
from agents.sessions.admin.sessions import HUMAN_QUEUE_PAGE, KIND_LABELS, SessionAdmin, human_since
from agents.sessions.handoff import session_handoff_reason
from agents.sessions.models import Session
from agents.sessions.selectors import STUCK_HELP, session_is_stuck
from agents.sessions.services import session_allowed_targets
from decision_service.errors import DomainError


@admin.register(Session)
class SessionQueueAdmin(SessionAdmin):
    # --- the human queue --------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        # A view of this admin rather than a proxy model's changelist: a proxy model would need a
        # migration. It is linked from the session list, the agents app page and the admin index.
        info = self.opts.app_label, self.opts.model_name
        queue = path(
            "human-queue/",
            self.admin_site.admin_view(self.human_queue_view),
            name="{}_{}_human_queue".format(*info),
        )
        act = path(
            "human-queue/<int:pk>/<str:step>/",
            self.admin_site.admin_view(self.human_queue_act_view),
            name="{}_{}_human_queue_act".format(*info),
        )
        return [queue, act, *super().get_urls()]

    def human_queue_view(self, request: HttpRequest) -> HttpResponse:
        """Sessions waiting in their machine's handoff state, the longest waiting first: how they got
        there, who holds them, and (with the permission) the buttons to work them."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        now = timezone.now()
        holder = request.GET.get("holder", "")
        holder = holder if holder in (MINE, UNCLAIMED, CLAIMED) else ""
        reason = request.GET.get("reason", "")
        reason = reason if reason in QUEUE_REASONS else ""
        queue = human_queue_list(holder=holder, user=request.user, reason=reason)
        page = Paginator(queue, HUMAN_QUEUE_PAGE).get_page(request.GET.get("p"))
        can_work = queue_work_allowed(request.user)
        can_approve = self.approvals_allowed(request)
        proposed_calls = human_queue_proposed_calls(list(page.object_list))
        rows = []
        for s in page.object_list:
            proposed = proposed_calls.get(s.pk)
            targets = session_allowed_targets(s)
            terminal = s.machine.terminal_states
            rows.append(
                {
                    "session": s,
                    "url": reverse("admin:agents_session_change", args=[s.pk]),
                    "waiting": human_since(s.state_entered_at, now),
                    "kind_label": KIND_LABELS.get(s.last_kind, s.last_kind) if s.last_kind else "",
                    "reason_label": QUEUE_REASONS.get(reason := session_handoff_reason(s) or "", reason),
                    "stuck": session_is_stuck(s, now=now),
                    "mine": s.claimed_by_id == request.user.pk,
                    "return_states": [t for t in targets if t not in terminal],
                    "resolve_states": [t for t in targets if t in terminal],
                    "claim_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "claim"]),
                    "release_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "release"]),
                    "return_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "return"]),
                    "resolve_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "resolve"]),
                    "proposed": proposed,
                    "proposed_input": json.dumps(proposed["input"], ensure_ascii=False, indent=1, sort_keys=True)
                    if proposed
                    else "",
                    "approve_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "approve"]),
                    "reject_url": reverse("admin:agents_session_human_queue_act", args=[s.pk, "reject"]),
                }
            )
        filters = {
            "holder": [("", _("all")), (MINE, _("mine")), (UNCLAIMED, _("unclaimed")), (CLAIMED, _("claimed"))],
            "reason": [("", _("any")), *QUEUE_REASONS.items()],
        }
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Human queue"),
            "subtitle": None,
            "rows": rows,
            "page_obj": page,
            "changelist_url": reverse("admin:agents_session_changelist"),
            "stuck_help": STUCK_HELP,
            "can_work": can_work,
            "can_approve": can_approve,
            "holder": holder,
            "reason": reason,
            "filters": filters,
            "filter_query": urlencode({k: v for k, v in (("holder", holder), ("reason", reason)) if v}),
            "here": request.get_full_path(),
        }
        return TemplateResponse(request, self.human_queue_template, context)

    def human_queue_step(self, request: HttpRequest, *, pk: int, step: str, key: str, note: str, state: str) -> str:
        """Take one step through its service; answers what was done, for the page's message."""
        if step == "claim":
            queue_claim(session_pk=pk, user=request.user, note=note)
            return gettext("You have %(session)s now.") % {"session": key}
        if step == "release":
            queue_release(session_pk=pk, user=request.user, note=note)
            return gettext("Session %(session)s is back in the queue, unclaimed.") % {"session": key}
        if step == "return":
            move = queue_return(session_pk=pk, user=request.user, state=state, note=note)
            return gettext("Session %(session)s is back with the bot, in %(state)s.") % {
                "session": key,
                "state": move.state,
            }
        if step == "resolve":
            move = queue_resolve(session_pk=pk, user=request.user, state=state, note=note)
            return gettext("Session %(session)s is resolved: it ended in %(state)s.") % {
                "session": key,
                "state": move.state,
            }
        raise DomainError(gettext("Unknown step '%(step)s'.") % {"step": step})

    def approvals_allowed(self, request: HttpRequest) -> bool:
        """Whether the page offers to approve and reject proposed tool calls: the approvals' admin
        (``agents.tools.admin_approvals``, a room above the queue) says so, and adds those steps."""
        return False

    def human_queue_act_view(self, request: HttpRequest, pk: int, step: str) -> HttpResponse:
        """One step on a waiting session (claim, release, return, resolve), through the queue services;
        a refusal is shown as a message on the queue page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
            back = reverse("admin:agents_session_human_queue")
        back = back or reverse("admin:agents_session_human_queue")
        note = request.POST.get("note", "").strip()
        state = request.POST.get("state", "").strip()
        key = Session.objects.filter(pk=pk).values_list("key", flat=True).first() or str(pk)
        try:
            done = self.human_queue_step(request, pk=pk, step=step, key=key, note=note, state=state)
        except DomainError as refused:
            messages.error(request, gettext("Session %(session)s: %(why)s") % {"session": key, "why": refused.detail})
        else:
            messages.success(request, done)
        return HttpResponseRedirect(back)

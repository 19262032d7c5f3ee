"""The configuration admins' base: the generic kit, with one configuration change per submission."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext

from decision_service.admin.kit import AuditedAdmin, AuditedInline
from decision_service.errors import Deferred
from rules.config.revisions import Actor, config_change
from rules.config.selectors import config_document
from rules.errors import ApprovalRequired, DuplicateChangeRequest
from rules.governance.admin.change_requests import duplicate_text, pending_notice
from rules.governance.risk import record_approval_note
from rules.governance.selectors import change_requests_touching


class ConfigAdmin(AuditedAdmin):
    """A configuration record's admin: a submission (form, inline rows, bulk delete, revert) is one
    ``config_change``, so it cuts at most one revision — or, when it is high-risk, becomes a change
    request, and the admin goes to the request's page. A record's page says which of its changes need
    approval and which open requests would change it (``governance_kind`` names its kind of record)."""

    change_form_template = "admin/arbiter/config_change_form.html"
    governance_kind = ""

    def governance_key(self, obj: Any) -> tuple[str, str]:
        """(key, point key) of the record as the configuration document names it."""
        return obj.key, ""

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if obj is not None and obj.pk and self.governance_kind:
            key, point = self.governance_key(obj)
            context["approval_note"] = record_approval_note(self.governance_kind, key, config_document(), point)
            touching = change_requests_touching(kind=self.governance_kind, key=key, point=point)
            context["pending_notice"] = pending_notice(touching) if touching else ""
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    def change_scope(self, *, actor: Actor, reason: str) -> AbstractContextManager[Any]:
        return config_change(actor=actor, reason=reason)

    def deferred_response(self, request: HttpRequest, deferred: Deferred) -> HttpResponse:
        if isinstance(deferred, DuplicateChangeRequest):
            # The same change already waits: the page to go to is that request's.
            self.message_user(request, duplicate_text(deferred), messages.WARNING)
            return HttpResponseRedirect(reverse("admin:rules_changerequest_change", args=[deferred.change_request.pk]))
        if not isinstance(deferred, ApprovalRequired):
            return super().deferred_response(request, deferred)
        pk = deferred.change_request.pk
        self.message_user(
            request,
            gettext(
                "Nothing was changed yet: this change needs a second person's approval. "
                "It waits in change request %(number)s."
            )
            % {"number": pk},
            messages.WARNING,
        )
        return HttpResponseRedirect(reverse("admin:rules_changerequest_change", args=[pk]))


__all__ = ["AuditedInline", "ConfigAdmin"]

"""Admin for webhook subscriptions (secrets shown once; disable, enable, rotate through the services) and
the delivery log (read only; a redeliver action for those allowed)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.webhooks.delivery import webhook_redeliver
from agents.webhooks.forms import WebhookSubscriptionForm
from agents.webhooks.models import EventKind, WebhookDelivery, WebhookSubscription
from agents.webhooks.services import (
    webhook_subscription_create,
    webhook_subscription_disable,
    webhook_subscription_enable,
    webhook_subscription_rotate_secret,
    webhook_subscription_save,
)
from decision_service.admin.display import when, when_cell
from decision_service.admin.kit import REFUSALS, ReadOnlyAdmin, actor_of, reason_from, refusal_text, refused_on_form
from rules.config.admin.base import ConfigAdmin
from rules.config.revisions import Actor, config_change

_NEW_SECRET_ATTR = "_arbiter_new_webhook_secret"  # noqa: S105 - an attribute name, not a secret
REDELIVER_PERMISSION = "agents.redeliver_webhooks"


def _show_secret_once(
    modeladmin: admin.ModelAdmin, request: HttpRequest, sub: WebhookSubscription, secret: str
) -> None:
    modeladmin.message_user(
        request,
        format_html(
            gettext(
                "The signing secret of the webhook to <strong>{}</strong> is shown only this once — copy it "
                'now and give it to the receiver: <code class="arbiter-token">{}</code>'
            ),
            sub.url,
            secret,
        ),
        messages.WARNING,
    )


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(ConfigAdmin):
    form = WebhookSubscriptionForm
    readonly_after_create = ("agent", "secret_start", "created_at", "disabled", "consecutive_failures")
    list_display = ("url", "agent", "kinds", "is_active", "disabled", "consecutive_failures", "created")
    list_filter = ("is_active", "agent")
    search_fields = ("url", "description", "agent__name")
    actions = ["rotate_secret", "disable", "enable"]
    fieldsets = [
        (None, {"fields": ["agent", "url", "description", "event_kinds", "is_active"]}),
        (
            _("Delivery"),
            {"fields": ["secret_start", "created_at", "disabled", "consecutive_failures"]},
        ),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[tuple[str | None, dict[str, Any]]]:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:  # no secret, no deliveries yet
            fieldsets = [(t, o) for t, o in fieldsets if "secret_start" not in o["fields"]]
        return fieldsets

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookSubscription]:
        return super().get_queryset(request).select_related("agent")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the delivery log refers to it: disable it instead

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True  # the secret is not in the history, so a revert could not restore it

    @admin.display(description=_("secret starts with"))
    def secret_start(self, obj: WebhookSubscription) -> str:
        return f"{obj.secret_prefix}…" if obj.secret_prefix else "—"

    @admin.display(description=_("event kinds"))
    def kinds(self, obj: WebhookSubscription) -> str:
        labels = dict(EventKind.choices)
        return ", ".join(str(labels.get(k, k)) for k in obj.event_kinds) or "—"

    @admin.display(description=_("disabled"))
    def disabled(self, obj: WebhookSubscription) -> str:
        if obj.disabled_at is None:
            return "—"
        return format_html(
            "<strong>{}</strong>",
            gettext("Disabled %(at)s: %(why)s") % {"at": when(obj.disabled_at), "why": obj.disabled_reason},
        )

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: WebhookSubscription) -> str:
        return when_cell(obj.created_at)

    def save_record(self, obj: WebhookSubscription, *, actor: Actor, reason: str) -> None:
        webhook_subscription_save(subscription=obj, actor=actor, reason=reason)

    def save_model(self, request: HttpRequest, obj: WebhookSubscription, form: Any, change: bool) -> None:
        actor, reason = actor_of(request), reason_from(request)
        obj.event_kinds = list(form.cleaned_data.get("event_kinds") or [])
        with refused_on_form():
            if change:
                webhook_subscription_save(subscription=obj, actor=actor, reason=reason)
                return
            sub, secret = webhook_subscription_create(
                agent=obj.agent,
                url=obj.url,
                event_kinds=obj.event_kinds,
                description=obj.description,
                is_active=obj.is_active,
                actor=actor,
                reason=reason,
            )
        # The admin goes on with the form's instance (log entry, redirect): make it the created record.
        for f in WebhookSubscription._meta.concrete_fields:
            setattr(obj, f.attname, getattr(sub, f.attname))
        obj._state.adding, obj._state.db = False, sub._state.db
        setattr(request, _NEW_SECRET_ATTR, (sub, secret))

    def response_add(
        self, request: HttpRequest, obj: WebhookSubscription, post_url_continue: str | None = None
    ) -> HttpResponse:
        created = getattr(request, _NEW_SECRET_ATTR, None)
        if created is not None:
            _show_secret_once(self, request, *created)
        return super().response_add(request, obj, post_url_continue)

    def _each(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription], reason: str, write: Any) -> list:
        try:
            with config_change(actor=actor_of(request), reason=reason):
                return [(sub, write(sub)) for sub in queryset]
        except REFUSALS as exc:
            self.message_user(
                request, gettext("Nothing was changed. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR
            )
            return []

    @admin.action(
        permissions=["change"], description=_("Rotate the signing secret (the old one signs for 24 hours more)")
    )
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription]) -> None:
        reason = "Secret rotated in admin"

        def rotate(sub: WebhookSubscription) -> str:
            return webhook_subscription_rotate_secret(subscription=sub, actor=actor_of(request), reason=reason)

        for sub, secret in self._each(request, queryset, reason, rotate):
            _show_secret_once(self, request, sub, secret)

    @admin.action(permissions=["change"], description=_("Disable selected subscriptions"))
    def disable(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription]) -> None:
        reason = "Disabled in admin"

        def off(sub: WebhookSubscription) -> Any:
            return webhook_subscription_disable(subscription=sub, actor=actor_of(request), reason=reason)

        if self._each(request, queryset.filter(is_active=True), reason, off):
            self.message_user(request, gettext("The selected subscriptions are disabled."), messages.SUCCESS)

    @admin.action(permissions=["change"], description=_("Enable selected subscriptions (their failures forgotten)"))
    def enable(self, request: HttpRequest, queryset: QuerySet[WebhookSubscription]) -> None:
        reason = "Enabled in admin"

        def on(sub: WebhookSubscription) -> Any:
            return webhook_subscription_enable(subscription=sub, actor=actor_of(request), reason=reason)

        if self._each(request, queryset.filter(is_active=False), reason, on):
            self.message_user(request, gettext("The selected subscriptions are enabled."), messages.SUCCESS)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """The delivery log: what was sent where, and what became of it."""

    list_display = ("created", "kind", "subscription", "status", "attempts", "last_status_code", "last_error", "next")
    list_filter = ("status", "kind", "subscription")
    search_fields = ("event_id", "subscription__url")
    list_select_related = ("subscription", "subscription__agent")
    actions = ["redeliver"]
    fields = (
        "event_id",
        "kind",
        "subscription",
        "status",
        "attempts",
        "last_status_code",
        "last_error",
        "created_at",
        "next_attempt_at",
        "delivered_at",
        "redelivery_of",
        "payload",
    )
    readonly_fields = fields

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: WebhookDelivery) -> str:
        return when_cell(obj.created_at)

    @admin.display(description=_("next attempt at"), ordering="next_attempt_at")
    def next(self, obj: WebhookDelivery) -> str:
        return when_cell(obj.next_attempt_at) if obj.next_attempt_at else "—"

    def has_redeliver_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(getattr(user, "is_active", False)) and user.has_perm(REDELIVER_PERMISSION)

    @admin.action(permissions=["redeliver"], description=_("Deliver the selected events again"))
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        with transaction.atomic():
            again = [webhook_redeliver(delivery=d) for d in queryset.select_related("subscription")]
        inactive = sum(1 for d in queryset.select_related("subscription") if not d.subscription.is_active)
        self.message_user(
            request, gettext("%(count)d deliveries queued again.") % {"count": len(again)}, messages.SUCCESS
        )
        if inactive:
            self.message_user(
                request,
                gettext("%(count)d of them go to an inactive subscription and will be skipped: enable it first.")
                % {"count": inactive},
                messages.WARNING,
            )
